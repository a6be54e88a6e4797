"""Rollouts as agent traces: each episode of the coding environment written as a Pi session (v3), the format
of the tutorial's own dataset, which the Hub's agent-trace viewer renders and ``tunepack traces convert`` reads.

    path = write_rollout(folder, messages, tools, meta)     # <folder>/<id>.jsonl
    meta_of(path)                                           # the tunepack.rollout entry's data, or None

Line 1 is the ``session`` header (with the environment's tool schemas under ``tools``, a key pi ignores); then
one ``message`` entry per user / assistant / tool result, chained by ``parentId``; last a ``custom`` entry
(``customType`` ``tunepack.rollout``: not part of the conversation) with the problem, the reward and its sources,
the hidden tests' verdict and the tool counts, which ``traces convert --only-verified`` filters on. Standard
library only (embedded in the training and eval scripts with the kit).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

CUSTOM_TYPE = "tunepack.rollout"


def _stamp(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _content(text) -> list[dict]:
    return [{"type": "text", "text": str(text or "")}]


def _assistant(message: dict, calls: list, model: str, ms: int) -> dict:
    blocks = _content(message.get("content")) if message.get("content") else []
    blocks += [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    return {"role": "assistant", "content": blocks, "api": "tunepack", "provider": "tunepack", "model": model,
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "toolUse" if calls else "stop", "timestamp": ms}


def pi_entries(messages: list[dict], model: str) -> list[dict]:
    """The messages (OpenAI shape: user/assistant with tool_calls/tool) as pi AgentMessages, calls paired with
    their results in order."""
    out, pending, n, ms = [], [], 0, int(time.time() * 1000)
    for message in messages:
        role = message.get("role")
        if role in ("user", "system"):
            out.append({"role": "user", "content": _content(message.get("content")), "timestamp": ms})
        elif role == "assistant":
            calls = []
            for call in message.get("tool_calls") or []:
                fn = call.get("function", call)
                n += 1
                args = fn.get("arguments")
                calls.append((f"call_{n}", fn.get("name"), args if isinstance(args, dict) else {"input": args}))
            pending = [(cid, name) for cid, name, _ in calls]
            out.append(_assistant(message, calls, model, ms))
        elif role == "tool":
            cid, name = pending.pop(0) if pending else (f"call_{n}", message.get("name"))
            text = str(message.get("content") or "")
            out.append({"role": "toolResult", "toolCallId": cid, "toolName": message.get("name") or name,
                        "content": _content(text), "isError": text.startswith(("error", "{'error'")),
                        "timestamp": ms})
        ms += 1
    return out


def write_rollout(folder: str | Path, messages: list[dict], tools: list[dict], meta: dict,
                  model: str = "policy") -> Path:
    """One rollout as ``<folder>/<session id>.jsonl``; the id is stable for the same content."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    body = json.dumps([messages, meta], sort_keys=True, default=str)
    session = hashlib.sha256(body.encode()).hexdigest()[:32]
    session = f"{session[:8]}-{session[8:12]}-{session[12:16]}-{session[16:20]}-{session[20:]}"
    ms = int(time.time() * 1000)
    lines = [{"type": "session", "version": 3, "id": session, "timestamp": _stamp(ms), "cwd": "/work",
              "tools": tools}]
    parent = None
    for k, message in enumerate(pi_entries(messages, model)):
        entry_id = f"{k + 1:08x}"
        lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": _stamp(ms + k),
                      "message": message})
        parent = entry_id
    lines.append({"type": "custom", "id": f"{len(lines):08x}", "parentId": parent, "timestamp": _stamp(ms),
                  "customType": CUSTOM_TYPE, "data": meta})
    path = folder / f"{session}.jsonl"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(line, default=str) + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)
    return path


def meta_of(path: str | Path) -> dict | None:
    """The ``tunepack.rollout`` data of a session file, or None (not a rollout, or unreadable)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("type") == "custom" and entry.get("customType") == CUSTOM_TYPE:
            data = entry.get("data")
            return data if isinstance(data, dict) else None
    return None


def training_rollouts(items, counts: dict):
    """The training rollouts among ``items`` (paths, or (anything, path) pairs), each with its rollout data:
    ``(item, meta)``. Counts ``rollouts``, ``not_rollouts`` and ``heldout`` in ``counts``: rollouts of the held-out
    curve and of eval tasks measure, they never train."""
    for item in items:
        path = item[1] if isinstance(item, tuple) else item
        meta = meta_of(path) if Path(path).is_file() else None
        if meta is None:
            counts["not_rollouts"] += 1
            continue
        counts["rollouts"] += 1
        if meta.get("split") not in (None, "train"):
            counts["heldout"] += 1
            continue
        yield item, meta
