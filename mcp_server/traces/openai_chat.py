"""OpenAI-style chat rows and ShareGPT conversations (.json arrays/objects or .jsonl rows).

A row holds its turns under ``messages`` (OpenAI), ``conversations`` (ShareGPT: ``from``/``value``),
``traj`` (τ-bench trajectories) or ``conversation``, and optionally ``tools``. Tool-call arguments may
be JSON strings (parsed; anything that is not a JSON object becomes ``{"input": text}``) or dicts.
The legacy ``function_call`` field and the ``function`` role are understood. ShareGPT's
``function_call`` turns (a JSON ``{name, arguments}``) are calls and ``observation``/``tool`` turns their
results. Ids may be missing or reused for different calls (τ-bench), so results pair with calls by
position within the turn, preferring a matching id.
"""

from __future__ import annotations

import json
from pathlib import Path

from .codex import parse_arguments
from .jsonl import read_json, read_jsonl
from .model import Call, Conversation, ConvertOptions, Msg
from .stats import FileReport

MESSAGE_KEYS = ("messages", "conversations", "traj", "conversation")
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant",
                  "system": "system", "observation": "tool", "tool": "tool", "function_response": "tool",
                  "function_call": "function_call"}


def _content(value, report: FileReport) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict):
                report.add("image_omitted" if "image" in str(part.get("type")) else "unknown_part_type")
        return "\n\n".join(p for p in parts if p)
    return json.dumps(value, ensure_ascii=False)


def _calls(message: dict) -> list[Call]:
    raw = message.get("tool_calls") or []
    if isinstance(message.get("function_call"), dict):
        raw = list(raw) + [{"function": message["function_call"]}]
    calls = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        function = item.get("function")
        fn = function if isinstance(function, dict) else item
        calls.append(Call(id=item.get("id"), name=str(fn.get("name") or "unknown"),
                          arguments=parse_arguments(fn.get("arguments"))))
    return calls


def row_messages(turns: list, report: FileReport) -> list[Msg]:
    out: list[Msg] = []
    for turn in turns:
        if not isinstance(turn, dict):
            report.add("unknown_entry_type")
            continue
        if "from" in turn and "role" not in turn:  # ShareGPT
            role = SHAREGPT_ROLES.get(str(turn.get("from")).lower())
            value = turn.get("value")
            if role == "function_call":
                try:
                    spec = json.loads(value) if isinstance(value, str) else value
                except ValueError:
                    spec = None
                if not isinstance(spec, dict):
                    report.add("unknown_entry_type")
                    continue
                call = Call(id=None, name=str(spec.get("name") or "unknown"),
                            arguments=parse_arguments(spec.get("arguments")))
                out.append(Msg(role="assistant", calls=[call]))
                continue
            turn = {"role": role, "content": value}
        role = turn.get("role")
        if role == "function":
            role = "tool"
        reasoning = turn.get("reasoning_content") or turn.get("reasoning") or turn.get("thinking") or ""
        if role == "assistant":
            out.append(Msg(role="assistant", content=_content(turn.get("content"), report),
                           reasoning=reasoning if isinstance(reasoning, str) else "", calls=_calls(turn),
                           model=turn.get("model")))
        elif role == "tool":
            out.append(Msg(role="tool", content=_content(turn.get("content"), report),
                           call_id=turn.get("tool_call_id"), name=turn.get("name")))
        elif role in ("user", "system", "developer"):
            out.append(Msg(role="system" if role == "developer" else role, content=_content(turn.get("content"), report)))
        else:
            report.add("unknown_message_role")
    return out


def _rows(path: Path, report: FileReport) -> list[dict]:
    if path.suffix == ".jsonl":
        return [obj for _, obj in read_jsonl(path, report)]
    data = read_json(path, report)
    if isinstance(data, dict):
        return [data]
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def read_openai(path: Path, opts: ConvertOptions, report: FileReport) -> list[Conversation]:
    out = []
    for index, row in enumerate(_rows(path, report)):
        key = next((k for k in MESSAGE_KEYS if isinstance(row.get(k), list)), None)
        if key is None:
            report.add("row_without_messages")
            continue
        report.sessions += 1
        session = next((str(row[k]) for k in ("id", "task_id") if row.get(k) is not None), f"{path.stem}#{index}")
        out.append(Conversation(source=str(path), format="openai", session=session, part=f"row:{index}",
                                messages=row_messages(row[key], report), tools=row.get("tools"), pairing="position"))
    return out
