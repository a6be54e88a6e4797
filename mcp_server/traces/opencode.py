"""OpenCode sessions: the legacy file store, the SQLite store, and ``opencode export`` JSON.

All three hold the same objects. Sessions (``parentID`` set for sub-agent sessions, each its own
conversation), messages (no text of their own) and parts:

- file store (``~/.local/share/opencode/storage``): ``session/<project>/<id>.json``,
  ``message/<session>/<id>.json``, ``part/<message>/<id>.json``;
- SQLite (``opencode.db``): tables ``session`` (id, parent_id, …), ``message`` (id, session_id,
  time_created, data) and ``part`` (id, message_id, session_id, time_created, data), where ``data`` is the
  object as JSON without its id columns;
- export: ``{info, messages: [{info, parts}]}``.

Ids sort by creation: messages are ordered by ``time.created`` (then id), parts by id. A ``tool`` part holds both the call
(``state.input``) and its result (``state.output``, or ``state.error``); pending or running calls have
none. One assistant message may span several model calls: a ``step-start`` part, or text after a
tool call, starts the next turn. An assistant message with an ``error`` is a failed turn (aborted for
``MessageAbortedError``). A ``summary`` assistant message is a compaction: its text opens the next
conversation as a user turn, and the turns before it form an earlier conversation.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ..sniff import is_sqlite_store, is_storage_root  # noqa: F401  (moved there: the config loader sniffs too)
from .jsonl import read_json
from .model import Call, Conversation, ConvertOptions, Msg, as_text
from .stats import FileReport


@dataclass
class Store:
    sessions: dict[str, dict] = field(default_factory=dict)
    messages: dict[str, list[dict]] = field(default_factory=dict)  # session id → message infos
    parts: dict[str, list[dict]] = field(default_factory=dict)  # message id → parts


def _json_file(path: Path, report: FileReport) -> dict | None:
    sub = FileReport(path=str(path), format="opencode")
    value = read_json(path, sub)
    report.lines += 1
    if not isinstance(value, dict):
        report.add("malformed_file")
        return None
    return value


def load_files(root: Path, report: FileReport) -> Store:
    store = Store()
    for path in sorted((root / "session").glob("*/*.json")):
        info = _json_file(path, report)
        if info is not None:
            store.sessions[str(info.get("id") or path.stem)] = info
    for path in sorted((root / "message").glob("*/*.json")):
        info = _json_file(path, report)
        if info is not None:
            info.setdefault("id", path.stem)
            store.messages.setdefault(str(info.get("sessionID") or path.parent.name), []).append(info)
    for path in sorted((root / "part").glob("*/*.json")):
        part = _json_file(path, report)
        if part is not None:
            part.setdefault("id", path.stem)
            store.parts.setdefault(str(part.get("messageID") or path.parent.name), []).append(part)
    return store


def _loads(text, report: FileReport) -> dict | None:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        report.add("malformed_row")
        return None
    return value if isinstance(value, dict) else None


def load_sqlite(path: Path, report: FileReport) -> Store:
    store = Store()
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(session)")}
        if "id" in columns:
            wanted = [c for c in ("id", "parent_id", "title", "directory") if c in columns]
            for row in db.execute(f"SELECT {', '.join(wanted)} FROM session"):
                info = dict(zip(wanted, row, strict=False))
                store.sessions[info["id"]] = {"id": info["id"], "parentID": info.get("parent_id"),
                                              "title": info.get("title"), "directory": info.get("directory")}
        for mid, sid, data in db.execute("SELECT id, session_id, data FROM message ORDER BY session_id, id"):
            report.lines += 1
            message = _loads(data, report)
            if message is not None:
                store.messages.setdefault(sid, []).append({**message, "id": mid, "sessionID": sid})
        for pid, mid, sid, data in db.execute("SELECT id, message_id, session_id, data FROM part ORDER BY id"):
            report.lines += 1
            part = _loads(data, report)
            if part is not None:
                store.parts.setdefault(mid, []).append({**part, "id": pid, "messageID": mid, "sessionID": sid})
    finally:
        db.close()
    return store


def load_export(data: dict) -> Store:
    raw_info = data.get("info")
    info: dict = raw_info if isinstance(raw_info, dict) else {}
    sid = str(info.get("id") or "session")
    store = Store(sessions={sid: info})
    for entry in data.get("messages") or []:
        if isinstance(entry, dict) and isinstance(entry.get("info"), dict):
            message = entry["info"]
            store.messages.setdefault(sid, []).append(message)
            store.parts[str(message.get("id"))] = [p for p in entry.get("parts") or [] if isinstance(p, dict)]
    return store


class _Builder:
    def __init__(self, opts: ConvertOptions, report: FileReport):
        self.opts, self.report = opts, report
        self.segments: list[list[Msg]] = [[]]
        self.turn: Msg | None = None
        self.results: list[Msg] = []

    def flush(self) -> None:
        if self.turn is not None:
            self.segments[-1].append(self.turn)
            self.segments[-1].extend(self.results)
        self.turn, self.results = None, []

    def user(self, parts: list[dict]) -> None:
        texts = []
        for part in parts:
            kind = part.get("type")
            if kind == "text" and not part.get("ignored"):
                texts.append(as_text(part.get("text")))
            elif kind == "file":
                self.report.add("file_part_omitted")
            elif kind not in ("text", "compaction", "subtask", "agent", "snapshot", "patch"):
                self.report.add("unknown_part_type")
        text = "\n\n".join(t for t in texts if t.strip())
        if text:
            self.segments[-1].append(Msg(role="user", content=text))

    def assistant(self, info: dict, parts: list[dict]) -> None:
        raw_error = info.get("error")
        error = raw_error if isinstance(raw_error, dict) else None
        status = "ok" if not error else ("aborted" if error.get("name") == "MessageAbortedError" else "error")
        model = info.get("modelID") or (info.get("model") or {}).get("modelID")
        if info.get("summary") is True:  # a compaction: the summary opens the next conversation
            text = "\n\n".join(as_text(p.get("text")) for p in parts if p.get("type") == "text")
            self.segments = self.segments + [[]] if self.opts.compacted else [[]]
            self.segments[-1].append(Msg(role="user", content=text))
            return

        def current() -> Msg:
            if self.turn is None:
                self.turn = Msg(role="assistant", status=status, model=model)
            return self.turn

        for part in parts:
            kind = part.get("type")
            if kind == "step-start" or (kind in ("text", "reasoning") and self.turn is not None and self.turn.calls):
                self.flush()
            if kind == "text":
                turn = current()
                turn.content = "\n\n".join(t for t in (turn.content, as_text(part.get("text"))) if t.strip())
            elif kind == "reasoning":
                turn = current()
                turn.reasoning = "\n\n".join(t for t in (turn.reasoning, as_text(part.get("text"))) if t.strip())
            elif kind == "tool":
                raw_state = part.get("state")
                state: dict = raw_state if isinstance(raw_state, dict) else {}
                args = state.get("input")
                call = Call(id=part.get("callID") or part.get("id"), name=str(part.get("tool") or "unknown"),
                            arguments=args if isinstance(args, dict) else {})
                current().calls.append(call)
                if state.get("status") == "completed":
                    self.results.append(Msg(role="tool", content=str(state.get("output") or ""), call_id=call.id))
                elif state.get("status") == "error":
                    self.results.append(Msg(role="tool", content=str(state.get("error") or ""), call_id=call.id))
            elif kind not in ("step-start", "step-finish", "snapshot", "patch", "agent", "retry", "compaction",
                              "subtask", "file"):
                self.report.add("unknown_part_type")
        self.flush()


def _created(info: dict) -> tuple:
    raw_time = info.get("time")
    time: dict = raw_time if isinstance(raw_time, dict) else {}
    created = time.get("created")
    return (created if isinstance(created, (int, float)) else 0, str(info.get("id")))


def convert_store(store: Store, source: str, opts: ConvertOptions, report: FileReport) -> list[Conversation]:
    out = []
    for sid in sorted(set(store.sessions) | set(store.messages)):
        messages = sorted(store.messages.get(sid, []), key=_created)
        if not messages:
            continue
        report.sessions += 1
        builder = _Builder(opts, report)
        for info in messages:
            parts = sorted(store.parts.get(str(info.get("id")), []), key=lambda p: str(p.get("id")))
            if info.get("role") == "user":
                builder.flush()
                builder.user(parts)
            elif info.get("role") == "assistant":
                builder.assistant(info, parts)
            else:
                report.add("unknown_message_role")
        builder.flush()
        parent = store.sessions.get(sid, {}).get("parentID")
        segments = [s for s in builder.segments if s]
        for n, msgs in enumerate(segments):
            part = "main" if len(segments) == 1 else f"segment:{n + 1}"
            part = f"subagent-of:{parent}" + ("" if len(segments) == 1 else f"#{part}") if parent else part
            out.append(Conversation(source=source, format="opencode", session=sid, part=part, messages=msgs))
    return out


def read_opencode(path: Path, opts: ConvertOptions, report: FileReport) -> list[Conversation]:
    """A storage folder, an opencode.db file, or an export .json file."""
    if path.is_dir():
        store = load_files(path, report)
    elif is_sqlite_store(path):
        store = load_sqlite(path, report)
    else:
        data = read_json(path, report)
        store = load_export(data) if isinstance(data, dict) else Store()
    return convert_store(store, str(path), opts, report)
