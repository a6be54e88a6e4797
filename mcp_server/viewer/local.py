"""Inspect a local dataset the way the Datasets Viewer would: DuckDB reads the files (jsonl, json,
parquet) for the column types and the row count; the conversation structure (roles, tool calls,
tool results, rows without an assistant turn) is read from the rows themselves."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from ..config.load import DATA_SUFFIXES
from ..errors import DataError
from ..guard_paths import Rules, refuse_credential
from ..shown import shown, shown_errors
from ..train.maskcheck import MaskCheckError, conversation, detect_format, rows_without_assistant
from ..walk import walk_files
from .models import Column, ConversationStats, DatasetReport

MAX_ROWS_SCANNED = 20000


def _files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    allowed = Rules().allows
    for entry in map(Path, paths):
        refuse_credential(entry, "dataset")
        if entry.is_dir():
            files += walk_files(entry, lambda p: p.suffix in DATA_SUFFIXES and allowed(p))
        elif entry.is_file():
            files.append(entry)
        else:
            raise DataError(f"'{entry}' does not exist.", "give the path of a .jsonl/.json/.parquet file or a folder.")
    if not files:
        raise DataError(f"No .jsonl/.json/.parquet files under {', '.join(paths)}.", "point at the dataset files.")
    return files


def _relation(con, path: Path):
    return con.read_parquet(str(path)) if path.suffix == ".parquet" else con.read_json(str(path))


def _string_arguments(row: dict, fmt: str, messages_column: str) -> int:
    """Tool calls whose arguments arrived as a JSON string (before tunepack normalises them)."""
    if fmt == "messages":
        raw = row.get(messages_column)
    else:
        parts = (row.get("prompt"), row.get("completion"))
        raw = [m for part in parts if isinstance(part, list) for m in part]
    count = 0
    for message in raw if isinstance(raw, list) else []:
        for call in (message or {}).get("tool_calls") or [] if isinstance(message, dict) else []:
            count += isinstance((call.get("function") or call).get("arguments"), str)
    return count


def conversation_stats(rows: list[dict], fmt: str, messages_column: str, tools_column: str) -> ConversationStats:
    roles: Counter = Counter()
    tools: Counter = Counter()
    results = unanswered = with_tools = as_string = 0
    lengths = []
    for row in rows:
        messages, row_tools, _ = conversation(row, fmt, messages_column, tools_column)
        as_string += _string_arguments(row, fmt, messages_column)
        lengths.append(len(messages))
        with_tools += bool(row_tools)
        pending = 0
        for message in messages:
            roles[message.get("role", "?")] += 1
            if message.get("role") == "tool":
                results += 1
                pending = max(0, pending - 1)
            for call in message.get("tool_calls") or []:
                tools[(call.get("function") or call).get("name", "?")] += 1
                pending += 1
        unanswered += pending
    missing = rows_without_assistant(rows, fmt, messages_column, tools_column)
    return ConversationStats(
        rows_checked=len(rows), roles=dict(roles),
        messages_per_row={"min": min(lengths, default=0), "mean": round(sum(lengths) / max(len(lengths), 1), 2),
                          "max": max(lengths, default=0)},
        tool_calls=dict(tools.most_common()), arguments_as_string=as_string, tool_results=results,
        calls_without_result=unanswered, rows_with_tools_column=with_tools, rows_without_assistant=missing[:20])


def inspect_dataset(paths: list[str], messages_column: str = "messages", tools_column: str = "tools") -> DatasetReport:
    """The report on a local dataset (credential files refused; what it shows of the rows redacted)."""
    with shown_errors():
        return shown(_inspect(paths, messages_column, tools_column))


def _session_rows(paths: list[str]) -> tuple[list[str], list[str]]:
    """(what to read, notes): raw agent sessions, on a Hub repo (hf://datasets/NS/NAME[@REV]) or here, replaced by
    the chat rows they convert to; other paths as they are."""
    from ..traces.convert import converted_rows, local_rows
    from ..traces.hub import PREFIX

    read, notes = [], []
    for p in paths:
        if str(p).startswith(PREFIX):
            read.append(str(converted_rows(p)))
        elif (found := local_rows(p)) is not None:
            read.append(str(found[0]))
            notes.append(f"'{p}' holds raw {found[1]} agent sessions: shown as the chat rows tunepack converts them to "
                         f"(default options; data.format traces trains on the same): {found[0]}")
        else:
            read.append(p)
    return read, notes


def _inspect(paths: list[str], messages_column: str, tools_column: str) -> DatasetReport:
    import duckdb

    from ..train.data import read_local_rows

    read, notes = _session_rows(paths)
    files = _files(read)
    con = duckdb.connect()
    columns: dict[str, str] = {}
    total = 0
    for f in files:
        try:
            rel = _relation(con, f)
        except duckdb.Error as exc:
            raise DataError(f"DuckDB cannot read '{f}': {str(exc).splitlines()[0]}",
                            "check the file is valid JSON Lines or Parquet.") from None
        for name, dtype in zip(rel.columns, rel.dtypes, strict=False):
            columns.setdefault(name, str(dtype) if len(str(dtype)) <= 160 else str(dtype)[:157] + "...")
        total += rel.aggregate("count(*)").fetchall()[0][0]
    rows: list[dict] = []
    for f in files:
        if len(rows) >= MAX_ROWS_SCANNED:
            break
        rows += read_local_rows(str(f))[: MAX_ROWS_SCANNED - len(rows)]
    stats, fmt = None, None
    try:
        fmt = detect_format(columns, messages_column)
    except MaskCheckError as exc:
        notes.append(str(exc))
    if fmt and rows:
        stats = conversation_stats(rows, fmt, messages_column, tools_column)
        if stats.rows_without_assistant:
            notes.append(f"rows without an assistant turn (first: {stats.rows_without_assistant}); drop them before training")
        if stats.arguments_as_string:
            notes.append(f"{stats.arguments_as_string} tool calls carry arguments as a JSON string; TRL chat templates "
                         "expect dicts (Gemma's reject strings): convert them with json.loads")
        if stats.calls_without_result:
            notes.append(f"{stats.calls_without_result} tool calls have no tool result after them")
        if stats.tool_calls and not stats.rows_with_tools_column:
            notes.append("tool calls but no tools column: the model never sees the tool schemas")
    if len(rows) < total:
        notes.append(f"conversation stats cover the first {len(rows)} of {total} rows")
    first = json.dumps(rows[0], default=str)[:1500] if rows else ""
    return DatasetReport(source="local", files=[str(f) for f in files], num_rows=total,
                         columns=[Column(name=k, type=v) for k, v in columns.items()], format=fmt,
                         conversations=stats, first_row=first, notes=notes)
