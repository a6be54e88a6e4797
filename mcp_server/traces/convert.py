"""The conversion: sources → conversations → normalised messages → rows → one atomic write.

Usage:
    from mcp_server.traces import ConvertOptions, convert
    report = convert(["~/.pi/agent/sessions"], "data/pi.jsonl", ConvertOptions(thinking="drop"))
    print(report.short())
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from ..errors import TraceError
from .claude_code import read_claude_code
from .codex import read_codex
from .detect import find_sources
from .model import Conversation, ConvertOptions
from .normalize import Normalized, normalize
from .openai_chat import read_openai
from .opencode import read_opencode
from .pi import read_pi
from ..redact import redact_messages
from .rows import TokenCounter, build_rows
from .schemas import ToolCatalog
from .stats import ConvertReport, FileReport, total
from .templates import check_template, has_tools, normalize_name
from .writer import check_output, write_atomic

log = logging.getLogger("tunepack.traces")
READERS = {"pi": read_pi, "claude-code": read_claude_code, "codex": read_codex, "opencode": read_opencode,
           "openai": read_openai}


def _failed(report: FileReport, reason: str, exc: Exception) -> None:
    """A source (or conversation) that could not be read: counted, named in the report, logged — not raised."""
    log.warning("%s: %s", report.path, reason, exc_info=True)
    report.add(reason)
    report.add(f"error: {type(exc).__name__}: {exc}"[:200])


def read_source(fmt: str, path: Path, opts: ConvertOptions) -> tuple[list[Conversation], FileReport]:
    """The conversations of one source; any failure to read it is reported, never raised."""
    report = FileReport(path=str(path), format=fmt)
    try:
        conversations = READERS[fmt](path, opts, report)
    except Exception as exc:  # a damaged or unexpected file must not stop the other sources
        _failed(report, "unreadable_source", exc)
        conversations = []
    report.conversations = len(conversations)
    return conversations, report


def windowed(rows: list[dict], counter: TokenCounter, opts: ConvertOptions) -> tuple[list[dict], dict]:
    """Conversation rows cut into windows of ``opts.max_length`` tokens (train/windows.py)."""
    from ..train.windows import window_rows

    meta = [{k: v for k, v in r.items() if k not in ("messages", "tools")} for r in rows]
    return window_rows([(r["messages"], r["tools"], m) for r, m in zip(rows, meta)], counter.count_messages,
                       opts.max_length, context_share=opts.window_context)


def _catalog_key(conv: Conversation) -> str:
    return conv.format if conv.format != "openai" else f"openai:{conv.source}"


def convert(paths: list[str | Path], out: str | Path | None, opts: ConvertOptions | None = None, *,
            allow_empty: bool = False) -> ConvertReport:
    """Convert every session under ``paths`` and write the rows to ``out`` (None: count only, write nothing).
    A path may be a Hub dataset repo of sessions, ``hf://datasets/NS/NAME[@REVISION]`` (downloaded, pinned)."""
    from .hub import resolve_paths

    opts = opts or ConvertOptions()
    paths, source = resolve_paths([str(p) for p in paths])
    template = normalize_name(opts.template)
    if opts.max_tokens and not opts.tokenizer:
        raise TraceError("--max-tokens needs a tokenizer to count tokens with.",
                         "add --tokenizer DIR (a local model or tokenizer folder), or drop --max-tokens.")
    if opts.rows == "window" and not (opts.tokenizer and opts.max_length):
        raise TraceError("--rows window needs a tokenizer and a window length to cut sessions by tokens.",
                         "add --tokenizer DIR (the model's tokenizer folder) and --max-length N (training.max_length); "
                         "or keep conversation rows: the training script windows long ones itself (data.windows: auto).")
    out_path = check_output(out) if out is not None else None
    counter = TokenCounter(opts.tokenizer, template)
    sources, skipped = find_sources(paths, opts.format)

    files: list[FileReport] = []
    normalized: list[tuple[Conversation, Normalized, FileReport]] = []
    thinking: Counter = Counter()
    redactions: Counter = Counter()
    catalog = ToolCatalog()
    for fmt, path in sources:
        conversations, report = read_source(fmt, path, opts)
        files.append(report)
        for conv in conversations:
            try:
                norm = normalize(conv.messages, by_position=conv.pairing == "position", opts=opts, report=report,
                                 thinking=thinking)
            except Exception as exc:
                _failed(report, "unreadable_conversation", exc)
                continue
            if norm is None:
                continue
            if opts.redact:
                redact_messages(norm.messages, redactions)
            catalog.observe(_catalog_key(conv), norm.messages)
            normalized.append((conv, norm, report))

    check_template(template, opts.rows, sum(1 for _, n, _ in normalized if has_tools(n.messages)))
    result = ConvertReport(output=str(out_path) if out_path else None, row_format=opts.rows,
                           token_counter=counter.label, source=source)
    rows: list[dict] = []
    shaping: Counter = Counter()
    calls: Counter = Counter()
    for conv, norm, report in normalized:
        tools = catalog.tools_for(_catalog_key(conv), conv.tools, set(norm.tool_calls), opts.synthesize_tools)
        kept = build_rows(conv, norm, tools, opts, template, counter, report, shaping)
        if not kept:
            continue
        result.conversations += 1
        for row, tokens in kept:
            rows.append(row)
            result.tokens += tokens
            turns = [m for m in row.get("completion", [])] if opts.rows == "turn" else None
            if turns is not None:
                result.assistant_turns += len(turns)
                calls.update(c["function"]["name"] for m in turns for c in m.get("tool_calls") or [])
        if opts.rows in ("conversation", "window"):
            result.assistant_turns += norm.assistant_turns
            calls.update(norm.tool_calls)

    if opts.rows == "window":
        rows, result.windows = windowed(rows, counter, opts)
    result.rows = len(rows)
    result.sessions = sum(f.sessions for f in files)
    result.tool_calls = sum(calls.values())
    result.tool_calls_by_name = dict(calls.most_common())
    result.formats = dict(Counter(f.format for f in files))
    result.thinking = {"kept": thinking["kept"], "dropped": thinking["dropped"]}
    result.problems, result.dropped = total(files)
    result.redactions = dict(redactions)
    result.files = files
    if skipped:
        result.notes.append(f"{len(skipped)} files were not recognised as sessions and skipped, e.g. {skipped[0]}")
    if shaping:
        result.notes.append(f"shaped for template {template}: " + ", ".join(f"{k} {v}" for k, v in shaping.items()))
    if not rows and not allow_empty:
        dropped = {**result.dropped, **((result.windows or {}).get("turns_dropped") or {})}
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(dropped.items(), key=lambda kv: -kv[1])[:6])
        raise TraceError(f"No rows were left to write from {len(sources)} sources ({result.sessions} sessions; "
                         f"dropped: {reasons or 'nothing'}).",
                         "loosen the filters (--model, --min-assistant-turns, --max-tokens), raise --max-length for "
                         "windows, check the paths and --format, or keep failed turns with --keep-failed-turns.")
    if out_path is not None and (rows or allow_empty):
        result.stats_path = str(write_atomic(rows, out_path, result.model_dump(mode="json")))
    return result
