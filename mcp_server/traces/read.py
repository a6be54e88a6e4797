"""Reading sessions: each source through its format's reader, each session redacted, each conversation normalised
into TRL messages, the tools observed per source — one phase of a conversion (convert.py), where a damaged file
or conversation is counted and reported, never raised.

Redaction (``mcp_server.redact.Redaction``) takes a session — the conversations of one source with one session
id: main line, side chains, segments — as one unit, before anything is dropped: every string of it (text,
reasoning, tool calls' ids, names and arguments with their keys, results, the tools it declares, its source and
id) is scanned, and a secret found anywhere in it is replaced wherever it occurs in it. Call ids stay one-to-one
(``distinct``), so results still pair with their calls.

    files, normalized = read_all(sources, opts, catalog, thinking, redactions)
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..redact import Redaction, distinct
from .claude_code import read_claude_code
from .codex import read_codex
from .droid import read_droid
from .hermes import read_hermes
from .model import Conversation, ConvertOptions
from .normalize import Normalized, normalize
from .openai_chat import read_openai
from .opencode import read_opencode
from .pi import read_pi
from .schemas import ToolCatalog
from .stats import FileReport

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


def _normalize_one(conv: Conversation, opts: ConvertOptions, report: FileReport,
                   thinking: Counter) -> Normalized | None:
    """``normalize`` for one conversation; a failure is reported (None), never raised."""
    try:
        return normalize(conv.messages, by_position=conv.pairing == "position", opts=opts, report=report,
                         thinking=thinking)
    except Exception as exc:
        _failed(report, "unreadable_conversation", exc)
        return None


def _ids(conv: Conversation) -> list[str | None]:
    """The call ids of ``conv`` in a fixed order: each message's ``call_id``, then its calls' ids."""
    return [i for m in conv.messages for i in [m.call_id, *(c.id for c in m.calls)]]


def _set_ids(conv: Conversation, ids: list[str | None]) -> None:
    """Set the call ids of ``conv`` from a list in ``_ids``'s order."""
    it = iter(ids)
    for m in conv.messages:
        m.call_id = next(it)
        for c in m.calls:
            c.id = next(it)


def _pass(conv: Conversation, text: Callable[[str], str], value: Callable[[Any], Any]) -> None:
    """One pass of a redaction over every string of ``conv``, in place (roles and statuses are the reader's own)."""
    conv.source, conv.session, conv.part, conv.tools = text(conv.source), text(conv.session), text(conv.part), \
        value(conv.tools)
    for m in conv.messages:
        m.content, m.reasoning = text(m.content), text(m.reasoning)
        m.call_id, m.name, m.model = (None if s is None else text(s) for s in (m.call_id, m.name, m.model))
        for c in m.calls:
            c.id, c.name, c.arguments = None if c.id is None else text(c.id), text(c.name), value(c.arguments)


def redact_session(conversations: list[Conversation], counts: Counter) -> None:
    """Redact the conversations of one session in place, as one unit (see the module's docstring)."""
    before = [_ids(conv) for conv in conversations]
    redaction = Redaction(counts)
    for conv in conversations:
        _pass(conv, redaction.text, redaction.first)
    if redaction.values:
        for conv in conversations:
            _pass(conv, redaction.spread, redaction.second)
    pairs = [(old, new) for conv, olds in zip(conversations, before, strict=True)
             for old, new in zip(olds, _ids(conv), strict=True) if old is not None and new is not None]
    if any(old != new for old, new in pairs):
        ids = distinct(dict(pairs))
        for conv, olds in zip(conversations, before, strict=True):
            _set_ids(conv, [None if old is None else ids[old] for old in olds])


def _sessions(conversations: list[Conversation]) -> list[list[Conversation]]:
    groups: dict[str, list[Conversation]] = {}
    for conv in conversations:
        groups.setdefault(conv.session, []).append(conv)
    return list(groups.values())


def read_all(sources: list[tuple[str, Path]], opts: ConvertOptions, catalog: ToolCatalog, thinking: Counter,
                   redactions: Counter) -> tuple[list[FileReport], list[tuple[Conversation, Normalized, FileReport]]]:
    """Read every source, redact its sessions and normalise their conversations: the file reports and what was
    kept."""
    files: list[FileReport] = []
    normalized: list[tuple[Conversation, Normalized, FileReport]] = []
    for fmt, path in sources:
        conversations, report = read_source(fmt, path, opts)
        files.append(report)
        if opts.redact:
            for session in _sessions(conversations):
                redact_session(session, redactions)
        for conv in conversations:
            norm = _normalize_one(conv, opts, report, thinking)
            if norm is None:
                continue
            catalog.observe(conv.catalog_key, norm.messages)
            normalized.append((conv, norm, report))
    return files, normalized
