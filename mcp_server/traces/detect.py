"""Find the session sources under the given paths and tell their format apart.

A folder is searched recursively. An OpenCode file store (a folder with ``message/`` next to
``session/`` or ``part/``) is one source; an SQLite file with ``message`` and ``part`` tables is an
OpenCode database; every other ``.jsonl`` / ``.json`` file is one source, recognised by its first lines:

- Pi: a ``session`` header line;
- Factory Droid: a ``session_start`` line;
- Codex: ``{timestamp, type, payload}`` lines (``session_meta``, ``response_item``, …);
- Claude Code: ``user``/``assistant`` lines with ``uuid``/``sessionId``, or its bookkeeping lines;
- Hermes Agent: a ``session_meta`` message line (gateway transcript), or a session object with ``messages`` and
  Hermes' keys (``source`` + ``started_at`` in an export, ``session_id`` + ``session_start``/``platform`` in a log);
- OpenCode export: ``{info, messages: [{info, parts}]}``;
- OpenAI chat / ShareGPT: rows holding ``messages``, ``conversations`` or ``traj``.

With an explicit format every source found is read with that format.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import TraceError
from ..guard_paths import Rules, refuse_credential
from ..walk import walk_files
from .jsonl import first_object
from .opencode import is_sqlite_store, is_storage_root

CODEX_TYPES = {"session_meta", "response_item", "turn_context", "event_msg", "compacted"}
CLAUDE_TYPES = {"user", "assistant", "summary", "file-history-snapshot", "queue-operation", "last-prompt", "system",
                "attachment", "progress", "permission-mode", "mode", "custom-title", "ai-title", "agent-name"}
CHAT_KEYS = ("messages", "conversations", "traj", "conversation")
SUFFIXES = (".jsonl", ".json")
DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def _is_hermes(obj: dict) -> bool:
    """A Hermes transcript's meta line, a `hermes sessions export` row or a CLI session log."""
    if obj.get("role") == "session_meta":
        return True
    if not isinstance(obj.get("messages"), list):
        return False
    export = "source" in obj and "started_at" in obj
    return export or ("session_id" in obj and ("session_start" in obj or "platform" in obj))


def _format_of(obj: dict) -> str | None:
    kind = obj.get("type") if isinstance(obj.get("type"), str) else None
    if kind == "session" and "id" in obj:
        return "pi"
    if kind == "session_start" and "id" in obj:
        return "droid"
    if kind in CODEX_TYPES and isinstance(obj.get("payload"), dict):
        return "codex"
    if kind in CLAUDE_TYPES and ("uuid" in obj or "sessionId" in obj or kind in ("summary", "file-history-snapshot")):
        return "claude-code"
    if _is_hermes(obj):
        return "hermes"
    if isinstance(obj.get("info"), dict) and isinstance(obj.get("messages"), list):
        return "opencode"
    if any(isinstance(obj.get(k), list) for k in CHAT_KEYS):
        return "openai"
    return None


def _sniff_objects(objects: list[dict]) -> str | None:
    return next((fmt for fmt in map(_format_of, objects) if fmt), None)


def sniff(path: Path) -> str | None:
    """The format of one file, or None when it is not a session file tunepack knows."""
    if path.suffix in DB_SUFFIXES:
        return "opencode" if is_sqlite_store(path) else None
    if path.suffix == ".jsonl":
        return _sniff_objects(first_object(path))
    if path.suffix == ".json":
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:65536].lstrip()
        except OSError:
            return None
        if head.startswith("["):  # an array of rows: OpenAI chat / ShareGPT
            return "openai"
        import json

        try:
            value = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except ValueError:
            return None
        return _sniff_objects([value]) if isinstance(value, dict) else None
    return None


def _walk(folder: Path, out: list[Path]) -> None:
    allowed = Rules().allows  # ~/.codex holds auth.json beside the sessions: never read
    out += walk_files(folder, lambda p: p.suffix in SUFFIXES + DB_SUFFIXES and allowed(p), stop_at=is_storage_root)


def find_sources(paths: Sequence[str | Path], fmt: str = "auto") -> tuple[list[tuple[str, Path]], list[str]]:
    """(format, path) per source, and the files skipped as not being sessions."""
    found: list[Path] = []
    for raw in paths:
        path = refuse_credential(Path(raw).expanduser(), "session path")
        if not path.exists():
            raise TraceError(f"The path '{raw}' does not exist.",
                             "pass session files or folders, e.g. ~/.pi/agent/sessions, ~/.claude/projects, "
                             "~/.codex/sessions, ~/.local/share/opencode/storage, ~/.factory/sessions or "
                             "~/.hermes/sessions.")
        if path.is_dir():
            _walk(path, found)
        else:
            found.append(path)
    sources, skipped = [], []
    for path in found:
        if path.is_dir():
            sources.append(("opencode", path))
            continue
        kind = sniff(path) if fmt == "auto" else fmt
        if kind is None:
            skipped.append(str(path))
        else:
            sources.append((kind, path))
    if not sources:
        shown = ", ".join(skipped[:5]) or ", ".join(map(str, paths))
        raise TraceError(f"No agent sessions were found in {shown}.",
                         "pass Pi, Claude Code, Codex, OpenCode, Factory Droid or Hermes Agent session files/folders, "
                         "or OpenAI/ShareGPT chat rows; or name the format with --format if detection failed.")
    return sources, skipped
