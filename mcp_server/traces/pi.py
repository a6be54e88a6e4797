"""Pi coding-agent sessions (``~/.pi/agent/sessions/--<cwd>--/<timestamp>_<id>.jsonl``).

Line 1 is the ``session`` header. Version 1 files are linear (entries have no ids); version 2 and 3
files are trees (``id`` / ``parentId``). The conversation is the branch that ends at the last entry,
rebuilt the way pi builds its own context:

- with a compaction on the branch, the conversation is the summary (as a user turn), then the
  entries from ``firstKeptEntryId`` up to the compaction, then the entries after it. The turns the
  summary replaced are emitted too, as an earlier conversation of their own (``compacted`` option), so
  every assistant turn of the branch appears exactly once;
- ``branch_summary``, ``custom_message``, ``custom``-role messages and ``bashExecution`` become user turns;
- ``thinking`` blocks become reasoning; a ``toolCall`` keeps its object arguments; a ``toolResult``
  answers the call with the same id; ``stopReason`` aborted/error marks a failed turn; a leftover
  ``partialJson`` (an interrupted stream) is counted and removed.

v1 compactions point at an entry by index (``firstKeptEntryIndex``, header included); a line holding
two objects contributes both, as it did in pi's memory when it wrote the index.

A header may carry ``tools`` (the OpenAI-shaped schemas; pi itself stores none and ignores the key): tunepack's
GRPO rollouts (``evals/kit/rollouts.py``) record the environment's tools there, and they win over inferred ones.
"""

from __future__ import annotations

from pathlib import Path

from .jsonl import read_jsonl
from .model import Call, Conversation, ConvertOptions, Msg, as_text, text_or_none
from .stats import FileReport

COMPACTION_PREFIX = ("The conversation history before this point was compacted into the following summary:"
                     "\n\n<summary>\n")
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"
NOT_CONTEXT = {"model_change", "thinking_level_change", "custom", "label", "session_info"}


def _text(content, report: FileReport) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(as_text(block.get("text")))
        elif block.get("type") == "image":
            report.add("image_omitted")
            parts.append("[image]")
    return "\n\n".join(p for p in parts if p)


def bash_text(m: dict) -> str:
    text = f"Ran `{m.get('command', '')}`\n"
    text += f"```\n{m['output']}\n```" if m.get("output") else "(no output)"
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif m.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {m['exitCode']}"
    if m.get("truncated") and m.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {m['fullOutputPath']}]"
    return text


def _assistant(m: dict, model: str | None, report: FileReport) -> Msg:
    texts, thoughts, calls = [], [], []
    content = m.get("content")
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(as_text(block.get("text")))
        elif kind == "thinking":
            thoughts.append(as_text(block.get("thinking")))
        elif kind == "toolCall":
            args = block.get("arguments")
            partial = "partialJson" in block
            if partial:
                report.add("partial_json_leftover")
            calls.append(Call(id=block.get("id"), name=str(block.get("name") or "unknown"),
                              arguments=args if isinstance(args, dict) else {}, partial=partial))
        else:
            report.add("unknown_block_type")
    stop = m.get("stopReason")
    return Msg(role="assistant", content="\n\n".join(t for t in texts if t.strip()),
               reasoning="\n\n".join(t for t in thoughts if t.strip()), calls=calls,
               status=stop if stop in ("aborted", "error") else "ok", model=m.get("model") or model)


def _message(entry: dict, model: str | None, report: FileReport) -> Msg | None:
    m = entry.get("message")
    if not isinstance(m, dict):
        report.add("unknown_entry_type")
        return None
    role = m.get("role")
    if role == "assistant":
        return _assistant(m, model, report)
    if role == "toolResult":
        return Msg(role="tool", content=_text(m.get("content"), report), call_id=m.get("toolCallId"),
                   name=m.get("toolName"))
    if role in ("user", "custom", "hookMessage"):
        return Msg(role="user", content=_text(m.get("content"), report))
    if role == "bashExecution":
        return None if m.get("excludeFromContext") else Msg(role="user", content=bash_text(m))
    if role == "branchSummary":
        return Msg(role="user", content=BRANCH_PREFIX + str(m.get("summary", "")) + BRANCH_SUFFIX)
    if role == "compactionSummary":
        return Msg(role="user", content=COMPACTION_PREFIX + str(m.get("summary", "")) + COMPACTION_SUFFIX)
    report.add("unknown_message_role")
    return None


def _context(entries: list[dict], report: FileReport) -> list[Msg]:
    """Messages of a run of branch entries (compaction entries inside it are skipped, as pi does)."""
    out, model = [], None
    for entry in entries:
        kind = entry.get("type")
        if kind == "model_change":
            model = entry.get("modelId") or model
        if kind == "message":
            msg = _message(entry, model, report)
            if msg is not None:
                out.append(msg)
        elif kind == "custom_message":
            out.append(Msg(role="user", content=_text(entry.get("content"), report)))
        elif kind == "branch_summary" and as_text(entry.get("summary")):
            out.append(Msg(role="user", content=BRANCH_PREFIX + entry["summary"] + BRANCH_SUFFIX))
    return out


def _segments(path: list[dict], opts: ConvertOptions, report: FileReport) -> list[list[Msg]]:
    last = max((i for i, e in enumerate(path) if e.get("type") == "compaction"), default=None)
    if last is None:
        return [_context(path, report)]
    compaction = path[last]
    kept = next((i for i, e in enumerate(path[:last]) if e.get("id") == compaction.get("firstKeptEntryId")), last)
    earlier = _segments(path[:kept], opts, report) if opts.compacted and kept > 0 else []
    summary = Msg(role="user", content=COMPACTION_PREFIX + str(compaction.get("summary", "")) + COMPACTION_SUFFIX)
    model = next((e.get("modelId") for e in reversed(path[:kept]) if e.get("type") == "model_change"), None)
    tail = _context([{"type": "model_change", "modelId": model}] + path[kept:last] + path[last + 1:], report)
    return earlier + [[summary] + tail]


def _branch(entries: list[dict], report: FileReport) -> list[dict]:
    """The entries from the root to the last entry, following parentId (v2+)."""
    by_id = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
    path: list[dict] = []
    seen: set[int] = set()
    current: dict | None = entries[-1]
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        path.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if parent else None
        if parent and current is None:
            report.add("missing_parent")
    return path[::-1]


def read_pi(path: Path, opts: ConvertOptions, report: FileReport) -> list[Conversation]:
    entries = [{**obj, "type": text_or_none(obj.get("type")), "id": text_or_none(obj.get("id")),
                "parentId": text_or_none(obj.get("parentId"))} if "id" in obj or "parentId" in obj
               else {**obj, "type": text_or_none(obj.get("type"))} for _, obj in read_jsonl(path, report)]
    if not entries:
        return []
    header = entries[0] if entries[0].get("type") == "session" else {}
    if not header:
        report.add("missing_session_header")
    session = str(header.get("id") or path.stem)
    body = entries[1:] if header else entries
    known = NOT_CONTEXT | {"message", "compaction", "branch_summary", "custom_message"}
    for e in body:
        kind = e.get("type")
        if kind not in known:
            report.add("unknown_entry_type")
            report.skip(str(kind))
        elif kind in NOT_CONTEXT:
            report.skip(kind)
    if not body:
        return []
    raw_version = header.get("version")
    version = raw_version if isinstance(raw_version, int) else 1
    linear = version < 2 or not any("id" in e and "parentId" in e for e in body)
    if linear:
        for index, e in enumerate(body):  # the v1 → v2 migration: ids in file order, index → id
            e["id"], e["parentId"] = f"#{index}", (f"#{index - 1}" if index else None)
        offset = 1 if header else 0
        for e in body:
            if e.get("type") == "compaction" and isinstance(e.get("firstKeptEntryIndex"), int):
                target = e["firstKeptEntryIndex"] - offset
                e["firstKeptEntryId"] = f"#{target}" if 0 <= target < len(body) else None
        branch = body
    else:
        branch = _branch(body, report)
    report.sessions += 1
    header_model = header.get("modelId")
    if header_model:
        branch = [{"type": "model_change", "modelId": header_model}] + branch
    segments = [s for s in _segments(branch, opts, report) if s]
    tools = header.get("tools") if isinstance(header.get("tools"), list) else None  # a tunepack rollout's schemas
    return [Conversation(source=str(path), format="pi", session=session,
                         part="main" if len(segments) == 1 else f"segment:{i + 1}", messages=msgs, tools=tools)
            for i, msgs in enumerate(segments)]
