"""Factory Droid sessions (``~/.factory/sessions/<encoded cwd>/<session uuid>.jsonl``, beside a
``<uuid>.settings.json`` that holds only settings and token usage).

Line 1 is ``{"type": "session_start", id, title, owner, version, cwd}``; every turn is a
``{"type": "message", id, timestamp, parentId?, message: {role, content}}`` line whose content is a string
or Anthropic-style blocks:

- assistant: ``text``, ``thinking`` (→ reasoning), ``tool_use`` ``{id, name, input}`` (→ a call with object
  arguments);
- user: ``text`` and ``tool_result`` ``{tool_use_id, content: string | text blocks, is_error?}``; a result
  answers the call with the same id (an errored result is still the model's observation);
- ``image`` blocks become ``[image]``. Other line types (``todo_state``, …) are counted and skipped.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import TraceError
from .claude_code import block_text
from .jsonl import read_jsonl
from .model import Call, Conversation, ConvertOptions, Msg, as_text, text_or_none
from .stats import FileReport


def _assistant(message: dict, report: FileReport) -> Msg:
    content = message.get("content")
    if isinstance(content, str):
        return Msg(role="assistant", content=content, model=message.get("model"))
    texts, thoughts, calls = [], [], []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(as_text(block.get("text")))
        elif kind in ("thinking", "reasoning"):
            thoughts.append(as_text(block.get("thinking") or block.get("text")))
        elif kind == "tool_use":
            calls.append(Call(id=block.get("id"), name=str(block.get("name") or "unknown"),
                              arguments=block.get("input") if isinstance(block.get("input"), dict) else {}))
        else:
            report.add("unknown_block_type")
    return Msg(role="assistant", content="\n\n".join(t for t in texts if t.strip()),
               reasoning="\n\n".join(t for t in thoughts if t.strip()), calls=calls, model=message.get("model"))


def _user(message: dict, report: FileReport) -> list[Msg]:
    """The tool results of a user line (as tool messages), then its text."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    out = [Msg(role="tool", content=block_text(b.get("content"), report), call_id=b.get("tool_use_id"))
           for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    text = block_text([b for b in blocks if not (isinstance(b, dict) and b.get("type") == "tool_result")]
                 if blocks else content, report)
    if text.strip():
        out.append(Msg(role="user", content=text))
    return out


def _message(line: dict, report: FileReport) -> list[Msg]:
    message = line.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    if isinstance(message, dict) and role == "assistant":
        return [_assistant(message, report)]
    if isinstance(message, dict) and role == "user":
        return _user(message, report)
    if isinstance(message, dict) and role == "system":
        return [Msg(role="system", content=block_text(message.get("content"), report))]
    report.add("unknown_message_role")
    return []


def read_droid(path: Path, opts: ConvertOptions, report: FileReport) -> list[Conversation]:
    lines = [obj for _, obj in read_jsonl(path, report)]
    start = next((obj for obj in lines if obj.get("type") == "session_start"), None)
    if start is None:
        raise TraceError(f"Not a Factory Droid session (no session_start line): {path.name}.",
                         "pass the <uuid>.jsonl files under ~/.factory/sessions, or name the right --format.")
    msgs: list[Msg] = []
    for line in lines:
        kind = text_or_none(line.get("type"))
        if kind == "message":
            msgs.extend(_message(line, report))
        elif kind != "session_start":
            report.skip(str(kind))
    report.sessions += 1
    if not msgs:
        return []
    session = text_or_none(start.get("id")) or path.stem
    return [Conversation(source=str(path), format="droid", session=session, messages=msgs)]
