"""The trace view: how the conversations of a ``messages`` column are shaped, over any backend.

Agent traces fail training in structural ways the row-by-row viewer hides: turns in an unexpected
order, tool calls whose arguments are JSON strings in some rows and dicts in others, calls never
answered by a tool message. This view counts role sequences (repeats folded: ``(assistant>tool)×3``)
and, per tool name, the calls, their argument keys, string-vs-dict arguments and calls left without
a result.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from ..shown import shown, shown_errors
from .backend import ViewerBackend

TOP_SEQUENCES = 15
MAX_ROLE_UNIT = 3


class ToolCallStats(BaseModel):
    calls: int = 0
    argument_keys: dict[str, int] = Field(default_factory=dict, description="calls per argument key")
    arguments_as_string: int = Field(0, description="arguments given as a JSON string (TRL templates want dicts)")
    arguments_as_dict: int = 0
    arguments_invalid_json: int = Field(0, description="string arguments that do not parse as a JSON object")
    without_result: int = Field(0, description="calls with no tool message answering them")


class TraceView(BaseModel):
    dataset: str
    config: str
    split: str
    column: str
    rows_scanned: int
    num_rows_total: int
    role_sequences: dict[str, int] = Field(description="most common role sequences, repeats folded as (a>b)×n")
    distinct_role_sequences: int
    roles: dict[str, int]
    messages_per_row: dict[str, int | float] = Field(description="min / mean / max")
    tool_calls: dict[str, ToolCallStats] = Field(description="per tool name")
    calls_without_result: int
    results_without_call: int = Field(description="tool messages that answer no call")
    rows_without_assistant: list[int] = Field(description="row_idx of rows with no assistant turn (first 20)")
    rows_not_conversations: int = Field(description="rows whose column is missing or not a list of messages")
    notes: list[str] = Field(default_factory=list)


def fold_roles(roles: list[str]) -> str:
    """'system>user>assistant>tool>assistant>tool>assistant' → 'system>user>(assistant>tool)×2>assistant'."""
    out, i = [], 0
    while i < len(roles):
        best = (1, 1)
        for size in range(1, MAX_ROLE_UNIT + 1):
            unit, k = roles[i:i + size], 1
            if len(unit) < size:
                break
            while roles[i + k * size:i + (k + 1) * size] == unit:
                k += 1
            if k >= 2 and k * size > best[0] * best[1]:
                best = (k, size)
        k, size = best
        unit = roles[i:i + size]
        out.append(unit[0] if k == 1 else (f"({'>'.join(unit)})" if size > 1 else unit[0]) + f"×{k}")
        i += k * size
    return ">".join(out)


def _call_parts(call: Any) -> tuple[str, Any, Any]:
    call = call if isinstance(call, dict) else {}
    fn = call.get("function") if isinstance(call.get("function"), dict) else call
    return str(fn.get("name") or "?"), fn.get("arguments"), call.get("id")


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _arguments(stats: ToolCallStats, arguments: Any) -> None:
    if isinstance(arguments, str):
        stats.arguments_as_string += 1
        arguments = _json_or_none(arguments)
        if not isinstance(arguments, dict):
            stats.arguments_invalid_json += 1
            return
    elif isinstance(arguments, dict):
        stats.arguments_as_dict += 1
    else:
        return
    for key, value in arguments.items():
        if value is not None:  # DuckDB fills keys other rows have with null
            stats.argument_keys[key] = stats.argument_keys.get(key, 0) + 1


class _Tally:
    def __init__(self) -> None:
        self.sequences: Counter = Counter()
        self.roles: Counter = Counter()
        self.tools: dict[str, ToolCallStats] = {}
        self.lengths: list[int] = []
        self.orphans = self.not_conversations = 0
        self.without_assistant: list[int] = []

    def add(self, row_idx: int, messages: Any) -> None:
        if isinstance(messages, str):
            messages = _json_or_none(messages)
        if not isinstance(messages, list):
            self.not_conversations += 1
            return
        messages = [m for m in messages if isinstance(m, dict)]
        roles = [str(m.get("role") or "?") for m in messages]
        self.sequences[fold_roles(roles)] += 1
        self.roles.update(roles)
        self.lengths.append(len(messages))
        if "assistant" not in roles and len(self.without_assistant) < 20:
            self.without_assistant.append(row_idx)
        i = 0
        while i < len(messages):
            calls = messages[i].get("tool_calls") or [] if roles[i] == "assistant" else []
            j = i + 1
            while j < len(messages) and roles[j] == "tool":
                j += 1
            results = messages[i + 1:j] if calls else []
            if not calls and roles[i] == "tool":
                self.orphans += 1
            self._match(calls, results)
            i = j if calls else i + 1

    def _match(self, calls: list, results: list[dict]) -> None:
        unused = list(results)
        for call in calls:
            name, arguments, call_id = _call_parts(call)
            stats = self.tools.setdefault(name, ToolCallStats())
            stats.calls += 1
            _arguments(stats, arguments)
            match = next((r for r in unused if call_id and r.get("tool_call_id") == call_id), None) or \
                next((r for r in unused if r.get("name") == name), None) or \
                next((r for r in unused if not r.get("tool_call_id") and not r.get("name")), None)
            if match is None:
                stats.without_result += 1
            else:
                unused.remove(match)
        self.orphans += len(unused)


def trace_view(backend: ViewerBackend, dataset: str, config: str, split: str, column: str = "messages",
               max_rows: int = 20000) -> TraceView:
    """Scan the first ``max_rows`` rows of ``column`` and count their conversation structure. A Hub repo of raw
    agent sessions (``hf://datasets/NS/NAME[@REV]``) is downloaded, converted and read through the local twin.
    The view is redacted (its tool names, argument keys and roles come from the data)."""
    with shown_errors():
        return shown(_trace_view(backend, dataset, config, split, column, max_rows))


def _trace_view(backend: ViewerBackend, dataset: str, config: str, split: str, column: str,
                max_rows: int) -> TraceView:
    if dataset.startswith("hf://datasets/"):
        from ..traces.convert import converted_rows
        from .twin import TwinViewer

        rows = converted_rows(dataset)
        view = _trace_view(TwinViewer(), str(rows), "default", "train", "messages", max_rows)
        return view.model_copy(update={"dataset": dataset, "notes": view.notes + [
            f"raw agent sessions converted to chat rows with the default options ({rows})"]})
    if getattr(backend, "source", None) == "local":
        from ..traces.convert import local_rows

        if (found := local_rows(dataset)) is not None:  # the twin reads the converted rows for a session folder
            view = _trace_view(backend, str(found[0]), config, split, "messages", max_rows)
            return view.model_copy(update={"dataset": dataset, "notes": view.notes + [
                f"raw {found[1]} agent sessions converted to chat rows with the default options ({found[0]})"]})
    total = backend.rows(dataset, config, split, 0, 0).num_rows_total
    tally, scanned = _Tally(), 0
    for row_idx, row in backend.iter_rows(dataset, config, split, max_rows, [column]):
        tally.add(row_idx, row.get(column))
        scanned += 1
    calls_without = sum(s.without_result for s in tally.tools.values())
    notes = []
    if scanned < total:
        notes.append(f"covers the first {scanned} of {total} rows (raise max_rows for more)")
    if tally.not_conversations:
        notes.append(f"{tally.not_conversations} rows have no list of messages in column '{column}'")
    as_string = sum(s.arguments_as_string for s in tally.tools.values())
    if as_string:
        notes.append(f"{as_string} tool calls carry arguments as a JSON string: convert them to dicts (json.loads) "
                     "before training; chat templates expect dicts")
    if calls_without:
        notes.append(f"{calls_without} tool calls have no tool message answering them")
    lengths = tally.lengths
    return TraceView(
        dataset=dataset, config=config, split=split, column=column, rows_scanned=scanned, num_rows_total=total,
        role_sequences=dict(tally.sequences.most_common(TOP_SEQUENCES)), distinct_role_sequences=len(tally.sequences),
        roles=dict(tally.roles.most_common()),
        messages_per_row={"min": min(lengths, default=0), "mean": round(sum(lengths) / max(len(lengths), 1), 2),
                          "max": max(lengths, default=0)},
        tool_calls=dict(sorted(tally.tools.items(), key=lambda kv: -kv[1].calls)),
        calls_without_result=calls_without, results_without_call=tally.orphans,
        rows_without_assistant=tally.without_assistant, rows_not_conversations=tally.not_conversations, notes=notes)
