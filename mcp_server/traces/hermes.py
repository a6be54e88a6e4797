"""Hermes Agent (Nous Research) sessions: three on-disk shapes holding the same OpenAI-style messages.

- CLI session log ``~/.hermes/sessions/session_<id>.json``: one object ``{session_id, model, platform,
  session_start, last_updated, system_prompt?, tools?, messages: [...]}``;
- gateway transcript ``~/.hermes/sessions/<id>.jsonl``: a ``{"role": "session_meta", tools, model, platform,
  timestamp}`` line, then one message per line;
- ``hermes sessions export`` JSON Lines: one session per line, the ``state.db`` session row (``id``, ``source``,
  ``model``, ``system_prompt``, ``started_at``, …) plus its ``messages`` (the ``messages`` table rows).

A message has ``role`` (user / assistant / tool / system), ``content`` (None beside tool calls), ``reasoning``
(or ``reasoning_content``), ``tool_calls`` (``[{id, type, function: {name, arguments: JSON string}}]``) and,
on results, ``tool_call_id`` and ``tool_name``. Results pair with calls by id. The stored system prompt and
tool schemas are kept (the system prompt is harness context: ``drop_harness_context`` removes it).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import TraceError
from .jsonl import read_json, read_jsonl
from .model import Conversation, ConvertOptions, Msg, text_or_none
from .openai_chat import row_messages
from .stats import FileReport

META_ROLE = "session_meta"
SHAPES = ("a ~/.hermes/sessions/session_<id>.json log, a gateway transcript <id>.jsonl (session_meta line first) "
          "or a `hermes sessions export` .jsonl")


def _messages(raw: list, report: FileReport) -> list[Msg]:
    turns = []
    for item in raw:
        if not isinstance(item, dict):
            report.add("unknown_entry_type")
        elif item.get("role") == META_ROLE:
            report.skip(META_ROLE)
        elif item.get("role") == "tool" and not item.get("name"):
            turns.append({**item, "name": item.get("tool_name")})
        else:
            turns.append(item)
    return row_messages(turns, report)


def _conversation(path: Path, session: str, part: str, msgs: list[Msg], meta: dict, opts: ConvertOptions,
                  report: FileReport) -> Conversation:
    model = text_or_none(meta.get("model"))
    for msg in msgs:
        if msg.role == "assistant" and not msg.model:
            msg.model = model
    prompt = meta.get("system_prompt")
    if isinstance(prompt, str) and prompt.strip():
        if opts.drop_harness_context:
            report.add("harness_context")
        else:
            msgs.insert(0, Msg(role="system", content=prompt))
    tools = meta.get("tools") if isinstance(meta.get("tools"), list) else None
    return Conversation(source=str(path), format="hermes", session=session, part=part, messages=msgs, tools=tools)


def _record(path: Path, record: dict, part: str, opts: ConvertOptions, report: FileReport) -> list[Conversation]:
    """One session object: a CLI log, or one line of an export."""
    if not isinstance(record.get("messages"), list):
        report.add("row_without_messages")
        return []
    report.sessions += 1
    session = text_or_none(record.get("id")) or text_or_none(record.get("session_id")) or path.stem
    return [_conversation(path, session, part, _messages(record["messages"], report), record, opts, report)]


def _not_hermes(path: Path, why: str) -> TraceError:
    return TraceError(f"Not a Hermes Agent session ({why}): {path.name}.",
                      f"pass {SHAPES}; for sessions only in ~/.hermes/state.db run `hermes sessions export "
                      "out.jsonl` first, or name the right --format.")


def read_hermes(path: Path, opts: ConvertOptions, report: FileReport) -> list[Conversation]:
    if path.suffix == ".jsonl":
        objects = [obj for _, obj in read_jsonl(path, report)]
        if not objects:
            raise _not_hermes(path, "no JSON object in the file")
        if any(isinstance(obj.get("messages"), list) for obj in objects):  # an export: one session per line
            parts = ["main"] if len(objects) == 1 else [f"row:{i}" for i in range(len(objects))]
            return [conv for obj, part in zip(objects, parts, strict=True) for conv in _record(path, obj, part, opts, report)]
        if not any("role" in obj for obj in objects):
            raise _not_hermes(path, "its lines are neither messages nor exported sessions")
        report.sessions += 1
        meta = next((obj for obj in objects if obj.get("role") == META_ROLE), {})
        return [_conversation(path, path.stem, "main", _messages(objects, report), meta, opts, report)]
    data = read_json(path, report)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise _not_hermes(path, "no session object with a messages list")
    return _record(path, data, "main", opts, report)
