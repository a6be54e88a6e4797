"""What a local JSON file holds, by its first lines: agent sessions of a harness (and which one), chat rows, or neither.

The traces room reads sessions in full (``traces/detect.py`` finds the sources with these checks); the config
loader, the viewer and ``data_inspect`` ask here first, so a folder of raw Pi, Claude Code, Codex, OpenCode, Factory
Droid or Hermes sessions is read as sessions wherever data is read, not as broken JSON Lines.

- Pi: a ``session`` header line;
- Factory Droid: a ``session_start`` line;
- Codex: ``{timestamp, type, payload}`` lines (``session_meta``, ``response_item``, …);
- Claude Code: ``user``/``assistant`` lines with ``uuid``/``sessionId``, or its bookkeeping lines;
- Hermes Agent: a ``session_meta`` message line (gateway transcript), or a session object with ``messages`` and
  Hermes' keys (``source`` + ``started_at`` in an export, ``session_id`` + ``session_start``/``platform`` in a log);
- OpenCode: a file store folder (``message/`` beside ``session/`` or ``part/``), an SQLite file with ``message`` and
  ``part`` tables, or an export ``{info, messages: [{info, parts}]}``;
- OpenAI chat / ShareGPT (``openai``): rows holding ``messages``, ``conversations`` or ``traj`` — chat rows, which
  every reader takes as they are.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from .guard_paths import Rules
from .walk import walk_files

CODEX_TYPES = {"session_meta", "response_item", "turn_context", "event_msg", "compacted"}
CLAUDE_TYPES = {"user", "assistant", "summary", "file-history-snapshot", "queue-operation", "last-prompt", "system",
                "attachment", "progress", "permission-mode", "mode", "custom-title", "ai-title", "agent-name"}
CHAT_KEYS = ("messages", "conversations", "traj", "conversation")
SUFFIXES = (".jsonl", ".json")
DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
HARNESS_FORMATS = ("pi", "claude-code", "codex", "opencode", "droid", "hermes")  # sessions, not chat rows
_DECODER = json.JSONDecoder()


def decode_line(text: str) -> tuple[list[dict], bool]:
    """The objects on one line and whether the line was clean (exactly one JSON object)."""
    try:
        value = json.loads(text)
    except ValueError:
        pass
    else:
        return ([value], True) if isinstance(value, dict) else ([], False)
    found, pos = [], 0
    while pos < len(text):
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except ValueError:
            break
        if isinstance(value, dict):
            found.append(value)
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
    return found, False


def first_object(path: Path, max_lines: int = 30) -> list[dict]:
    """Up to ``max_lines`` decodable objects from the head of a JSON Lines file (format detection)."""
    found: list[dict] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for _, line in zip(range(max_lines), handle, strict=False):
                if line.strip():
                    found.extend(decode_line(line.strip())[0])
    except OSError:
        return []
    return found


def is_storage_root(folder: Path) -> bool:
    return (folder / "message").is_dir() and ((folder / "session").is_dir() or (folder / "part").is_dir())


def is_sqlite_store(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            if handle.read(16) != b"SQLite format 3\x00":
                return False
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {"message", "part"} <= names
    except (OSError, sqlite3.Error):
        return False


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


def session_format(path: Path, limit: int = 200) -> str | None:
    """The harness whose sessions a file or folder holds (the first of up to ``limit`` files that is one), or None
    for chat rows, other data and missing paths."""
    if path.is_dir():
        if is_storage_root(path):
            return "opencode"
        allowed = Rules().allows
        files = walk_files(path, lambda p: p.suffix in SUFFIXES + DB_SUFFIXES and allowed(p), stop_at=is_storage_root)
        for found in files[:limit]:
            kind = "opencode" if found.is_dir() else sniff(found)
            if kind in HARNESS_FORMATS:
                return kind
        return None
    kind = sniff(path) if path.is_file() else None
    return kind if kind in HARNESS_FORMATS else None
