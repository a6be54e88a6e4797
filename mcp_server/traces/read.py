"""Reading sessions: each source through its format's reader, each conversation normalised (and redacted) into
TRL messages, the tools observed per source — one phase of a conversion (convert.py), where a damaged file or
conversation is counted and reported, never raised.

    files, normalized = read_all(sources, opts, catalog, thinking, redactions)
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from ..redact import redact_messages
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


def read_all(sources: list[tuple[str, Path]], opts: ConvertOptions, catalog: ToolCatalog, thinking: Counter,
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
            catalog.observe(conv.catalog_key, norm.messages)
            normalized.append((conv, norm, report))
    return files, normalized
