"""Turn a normalised conversation into dataset rows, and apply the row filters.

- ``conversation`` rows: ``{"messages": [...], "tools": [...], source, format, session, part}``;
- ``turn`` rows: one per model turn (consecutive assistant messages, as Gemma 4's text piece and call piece, are
  one turn), ``{"prompt": <everything before it>, "completion": [<the turn's messages>],
  "tools": [...], ...}`` — TRL's conversational prompt/completion format (loss on the completion only).
  Each row repeats the whole history before its turn, so long sessions grow quadratically (the two
  1 MB shared Pi sessions give about 215 MB of turn rows); prefer conversation rows for long sessions.

Filters: ``model`` (a turn's model id contains the text, case-insensitive; a conversation row is kept
when any of its turns matches), ``min_assistant_turns`` (per conversation, before it is cut into turn
rows) and ``max_tokens`` (per row, counted with ``tokenizer`` rendering the row with the chosen template,
or the tokenizer's own). Without a tokenizer, token figures are estimates (characters / 4).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import TraceError
from ..evals.kit.shaping import model_turns
from .model import DROPPER_TEMPLATES, Conversation, ConvertOptions
from .normalize import Normalized
from .schemas import ToolCatalog
from .stats import ConvertReport, FileReport
from .templates import flatten_tools, shape


class TokenCounter:
    """Tokens per row: the tokenizer rendering the row's chat, or an estimate without one."""

    def __init__(self, tokenizer_dir: str | None = None, template: str | None = None):
        self.tokenizer, self.template = None, None
        self.label = "estimate (characters / 4)"
        if not tokenizer_dir:
            return
        from ..errors import require_extra

        require_extra("transformers", "train")
        from transformers import AutoTokenizer

        if not Path(tokenizer_dir).is_dir():
            raise TraceError(f"The tokenizer folder '{tokenizer_dir}' does not exist.",
                             "pass a local folder saved with save_pretrained (it holds tokenizer.json or "
                             "tokenizer_config.json), e.g. a downloaded model folder.")
        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
        if template:  # count what training will see: the training template of that name (tunepack's or TRL's)
            import trl

            from ..resources import chat_templates

            path = Path(trl.__file__).parent / "chat_templates" / f"{template}_training.jinja"
            self.template = chat_templates().get(template) or (
                path.read_text(encoding="utf-8") if path.is_file() else None)
        self.template = self.template or self.tokenizer.chat_template
        self.label = f"tokenizer {tokenizer_dir}" + (f" with template {template}" if template else "")

    def count_messages(self, messages: list[dict], tools) -> int:
        """Exact tokens of ``messages`` rendered with the template (windows need a tokenizer)."""
        if self.tokenizer is None:
            raise TraceError("Counting a window's tokens needs a tokenizer.",
                             "add --tokenizer DIR (the model's tokenizer folder) with --rows window.")
        return _length(self.tokenizer.apply_chat_template(messages, tools=tools or None, chat_template=self.template,
                                                          tokenize=True, return_dict=True))

    def count(self, row: dict) -> int:
        messages = row.get("messages") or (row.get("prompt", []) + row.get("completion", []))
        if self.tokenizer is None:
            return len(json.dumps(messages, ensure_ascii=False)) // 4
        if self.template:
            try:
                return _length(self.tokenizer.apply_chat_template(
                    messages, tools=row.get("tools") or None, chat_template=self.template, tokenize=True,
                    return_dict=True))
            except Exception:  # a template that cannot render the row: count its text instead
                pass
        return len(self.tokenizer(json.dumps(messages, ensure_ascii=False))["input_ids"])


def _length(encoded: object) -> int:
    """The token count of ``apply_chat_template(tokenize=True, return_dict=True)``: always a BatchEncoding, though
    its annotation lists every shape the method can return."""
    from transformers import BatchEncoding

    if not isinstance(encoded, BatchEncoding):
        raise TypeError(f"apply_chat_template returned {type(encoded).__name__}, not a BatchEncoding")
    return len(encoded["input_ids"])


def _matches(model: str | None, wanted: str | None) -> bool:
    return wanted is None or (model is not None and wanted.lower() in model.lower())


def build_rows(conv: Conversation, norm: Normalized, tools: list[dict], opts: ConvertOptions, template: str | None,
               counter: TokenCounter, report: FileReport, shaping: Counter) -> list[tuple[dict, int]]:
    """(row, tokens) for the rows of one conversation that pass the filters; drops are counted in ``report``."""
    if norm.assistant_turns < opts.min_assistant_turns:
        report.add("min_assistant_turns")
        return []
    tagged = [dict(m, _i=i) for i, m in enumerate(norm.messages)]
    if template in DROPPER_TEMPLATES and opts.rows == "turn":
        shaped = flatten_tools(tagged)
    else:
        shaped = shape(tagged, template, shaping)
    models = [norm.models[m["_i"]] if m.get("_i") is not None else None for m in shaped]
    for m in shaped:
        m.pop("_i", None)
    meta = {"source": conv.source, "format": conv.format, "session": conv.session, "part": conv.part}
    if opts.rows in ("conversation", "window"):  # windows are cut from conversation rows afterwards
        if opts.model and not any(_matches(m, opts.model) for m in models if m is not None):
            report.add("model_filter")
            return []
        candidates: list[dict[str, Any]] = [{"messages": shaped, "tools": tools, **meta}]
    else:
        candidates = []
        for j, end in model_turns(shaped):  # one row per model turn: its text piece and call piece together
            if not any(_matches(models[k], opts.model) for k in range(j, end)):
                report.add("model_filter")
                continue
            candidates.append({"prompt": shaped[:j], "completion": shaped[j:end], "tools": tools, **meta, "turn": j})
    out = []
    for row in candidates:
        tokens = counter.count(row)
        if opts.max_tokens and tokens > opts.max_tokens:
            report.add("max_tokens")
            continue
        out.append((row, tokens))
    return out


def build_all(normalized: list[tuple[Conversation, Normalized, FileReport]], catalog: ToolCatalog,
               opts: ConvertOptions, template: str | None, counter: TokenCounter, result: ConvertReport,
               shaping: Counter, calls: Counter) -> list[dict]:
    """The rows of every normalised conversation, counting conversations, tokens, turns and calls in ``result``."""
    rows: list[dict] = []
    for conv, norm, report in normalized:
        tools = catalog.tools_for(conv.catalog_key, conv.tools, set(norm.tool_calls), opts.synthesize_tools)
        kept = build_rows(conv, norm, tools, opts, template, counter, report, shaping)
        if not kept:
            continue
        result.conversations += 1
        for row, tokens in kept:
            rows.append(row)
            result.tokens += tokens
            if opts.rows == "turn":
                turns = list(row.get("completion", []))
                result.assistant_turns += len(turns)
                calls.update(c["function"]["name"] for m in turns for c in m.get("tool_calls") or [])
        if opts.rows in ("conversation", "window"):
            result.assistant_turns += norm.assistant_turns
            calls.update(norm.tool_calls)
    return rows


def windowed(rows: list[dict], counter: TokenCounter, opts: ConvertOptions) -> tuple[list[dict], dict]:
    """Conversation rows cut into windows of ``opts.max_length`` tokens (train/windows.py)."""
    from ..train.windows import window_rows

    if opts.max_length is None:
        raise TraceError("--rows window needs a window length to cut sessions by tokens.",
                         "add --max-length N (training.max_length).")
    meta = [{k: v for k, v in r.items() if k not in ("messages", "tools")} for r in rows]
    return window_rows([(r["messages"], r["tools"], m) for r, m in zip(rows, meta, strict=False)], counter.count_messages,
                       opts.max_length, context_share=opts.window_context)
