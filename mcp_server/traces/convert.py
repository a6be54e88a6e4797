"""The conversion: sources → conversations → normalised messages → rows → one atomic write.

Usage:
    from mcp_server.traces import ConvertOptions, convert
    report = convert(["~/.pi/agent/sessions"], "data/pi.jsonl", ConvertOptions(thinking="drop"))
    print(report.short())
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..errors import TraceError
from ..redact import redact_messages
from .claude_code import read_claude_code
from .codex import read_codex
from .detect import find_sources
from .droid import read_droid
from .hermes import read_hermes
from .model import Conversation, ConvertOptions
from .normalize import Normalized, normalize
from .openai_chat import read_openai
from .opencode import read_opencode
from .pi import read_pi
from .rows import TokenCounter, build_rows
from .schemas import ToolCatalog
from .stats import ConvertReport, FileReport, total
from .templates import check_template, has_tools, normalize_name
from .writer import check_output, write_atomic

log = logging.getLogger("tunepack.traces")
READERS = {"pi": read_pi, "claude-code": read_claude_code, "codex": read_codex, "opencode": read_opencode,
           "openai": read_openai, "hermes": read_hermes, "droid": read_droid}


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

    if opts.max_length is None:
        raise TraceError("--rows window needs a window length to cut sessions by tokens.",
                         "add --max-length N (training.max_length).")
    meta = [{k: v for k, v in r.items() if k not in ("messages", "tools")} for r in rows]
    return window_rows([(r["messages"], r["tools"], m) for r, m in zip(rows, meta, strict=False)], counter.count_messages,
                       opts.max_length, context_share=opts.window_context)


def _catalog_key(conv: Conversation) -> str:
    return conv.format if conv.format != "openai" else f"openai:{conv.source}"


def _check_options(opts: ConvertOptions) -> None:
    """Refuse options that need a tokenizer (or a window length) they were not given."""
    if opts.max_tokens and not opts.tokenizer:
        raise TraceError("--max-tokens needs a tokenizer to count tokens with.",
                         "add --tokenizer DIR (a local model or tokenizer folder), or drop --max-tokens.")
    if opts.rows == "window" and not (opts.tokenizer and opts.max_length):
        raise TraceError("--rows window needs a tokenizer and a window length to cut sessions by tokens.",
                         "add --tokenizer DIR (the model's tokenizer folder) and --max-length N (training.max_length); "
                         "or keep conversation rows: the training script windows long ones itself (data.windows: auto).")


def _normalize_one(conv: Conversation, opts: ConvertOptions, report: FileReport,
                   thinking: Counter) -> Normalized | None:
    """``normalize`` for one conversation; a failure is reported (None), never raised."""
    try:
        return normalize(conv.messages, by_position=conv.pairing == "position", opts=opts, report=report,
                         thinking=thinking)
    except Exception as exc:
        _failed(report, "unreadable_conversation", exc)
        return None


def _normalize_all(sources: list[tuple[str, Path]], opts: ConvertOptions, catalog: ToolCatalog, thinking: Counter,
                   redactions: Counter) -> tuple[list[FileReport], list[tuple[Conversation, Normalized, FileReport]]]:
    """Read every source and normalise (and redact) its conversations: the file reports and what was kept."""
    files: list[FileReport] = []
    normalized: list[tuple[Conversation, Normalized, FileReport]] = []
    for fmt, path in sources:
        conversations, report = read_source(fmt, path, opts)
        files.append(report)
        for conv in conversations:
            norm = _normalize_one(conv, opts, report, thinking)
            if norm is None:
                continue
            if opts.redact:
                redact_messages(norm.messages, redactions)
            catalog.observe(_catalog_key(conv), norm.messages)
            normalized.append((conv, norm, report))
    return files, normalized


def _build_all(normalized: list[tuple[Conversation, Normalized, FileReport]], catalog: ToolCatalog,
               opts: ConvertOptions, template: str | None, counter: TokenCounter, result: ConvertReport,
               shaping: Counter, calls: Counter) -> list[dict]:
    """The rows of every normalised conversation, counting conversations, tokens, turns and calls in ``result``."""
    rows: list[dict] = []
    for conv, norm, report in normalized:
        tools = catalog.tools_for(_catalog_key(conv), conv.tools, set(norm.tool_calls), opts.synthesize_tools)
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


def _summarize(result: ConvertReport, rows: list[dict], files: list[FileReport], calls: Counter, thinking: Counter,
               redactions: Counter) -> None:
    result.rows = len(rows)
    result.sessions = sum(f.sessions for f in files)
    result.tool_calls = sum(calls.values())
    result.tool_calls_by_name = dict(calls.most_common())
    result.formats = dict(Counter(f.format for f in files))
    result.thinking = {"kept": thinking["kept"], "dropped": thinking["dropped"]}
    result.problems, result.dropped = total(files)
    result.redactions = dict(redactions)
    result.files = files


def _add_notes(result: ConvertReport, skipped: list[str], shaping: Counter, template: str | None) -> None:
    if skipped:
        result.notes.append(f"{len(skipped)} files were not recognised as sessions and skipped, e.g. {skipped[0]}")
    if shaping:
        result.notes.append(f"shaped for template {template}: " + ", ".join(f"{k} {v}" for k, v in shaping.items()))


def _no_rows_error(result: ConvertReport, n_sources: int) -> TraceError:
    """Why nothing is left to write: the commonest reasons rows were dropped."""
    dropped = {**result.dropped, **((result.windows or {}).get("turns_dropped") or {})}
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(dropped.items(), key=lambda kv: -kv[1])[:6])
    problems = "; ".join(f"{k} ({v})" for k, v in list(result.problems.items())[:3])
    return TraceError(f"No rows were left to write from {n_sources} sources ({result.sessions} sessions; "
                      f"dropped: {reasons or 'nothing'}{'; input problems: ' + problems if problems else ''}).",
                      "loosen the filters (--model, --min-assistant-turns, --max-tokens), raise --max-length for "
                      "windows, check the paths and --format, or keep failed turns with --keep-failed-turns.")


def convert(paths: Sequence[str | Path], out: str | Path | None, opts: ConvertOptions | None = None, *,
            allow_empty: bool = False) -> ConvertReport:
    """Convert every session under ``paths`` and write the rows to ``out`` (None: count only, write nothing).
    A path may be a Hub dataset repo of sessions, ``hf://datasets/NS/NAME[@REVISION]`` (downloaded, pinned)."""
    from .hub import resolve_paths

    opts = opts or ConvertOptions()
    resolved, source = resolve_paths([str(p) for p in paths])
    template = normalize_name(opts.template)
    _check_options(opts)
    out_path = check_output(out) if out is not None else None
    counter = TokenCounter(opts.tokenizer, template)
    sources, skipped = find_sources(resolved, opts.format)
    verified = None
    if opts.only_verified:  # rejection sampling: the passing rollouts of a GRPO run, deduped and capped
        from .verified import verified_sources

        sources, counts, lineage = verified_sources(sources, opts.per_problem)
        verified = {**counts, "lineage": lineage}

    thinking: Counter = Counter()
    redactions: Counter = Counter()
    catalog = ToolCatalog()
    files, normalized = _normalize_all(sources, opts, catalog, thinking, redactions)

    check_template(template, opts.rows, sum(1 for _, n, _ in normalized if has_tools(n.messages)))
    result = ConvertReport(output=str(out_path) if out_path else None, row_format=opts.rows,
                           token_counter=counter.label, source=source, verified=verified)
    shaping: Counter = Counter()
    calls: Counter = Counter()
    rows = _build_all(normalized, catalog, opts, template, counter, result, shaping, calls)

    if opts.rows == "window":
        rows, result.windows = windowed(rows, counter, opts)
    _summarize(result, rows, files, calls, thinking, redactions)
    _add_notes(result, skipped, shaping, template)
    if not rows and not allow_empty:
        raise _no_rows_error(result, len(sources))
    if out_path is not None and (rows or allow_empty):
        result.stats_path = str(write_atomic(rows, out_path, result.model_dump(mode="json")))
    return result
