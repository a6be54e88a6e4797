"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``).

Every line is ``{timestamp, type, payload}``. Only ``response_item`` lines are the model-visible
history; ``event_msg`` duplicates them for the UI and is skipped. Items map as follows:

- ``message``: user → user, assistant → assistant, developer/system → system;
- ``reasoning``: its summary and content texts become the turn's reasoning (encrypted content is dropped);
- ``function_call`` (JSON-string arguments), ``custom_tool_call`` (freeform ``input`` → ``{"input": …}``),
  ``local_shell_call`` (its ``action``) and ``tool_search_call`` are tool calls, answered by the
  ``*_output`` item with the same ``call_id`` (string outputs as they are, item lists joined);
- web search, image generation, ghost snapshots and agent messages are counted and skipped.

``session_meta`` gives the session id and the system prompt (``base_instructions`` / ``instructions``);
``turn_context`` the model of the turns that follow. A ``compacted`` line replaces the history with
its ``replacement_history``: the turns before it are emitted as an earlier conversation
(``compacted`` option). With ``drop_harness_context`` the harness's own context is removed: the system
prompt, developer messages, and the user messages holding ``<environment_context>``, AGENTS.md or
user instructions.
"""

from __future__ import annotations

import json
from pathlib import Path

from .jsonl import read_jsonl
from .model import Call, Conversation, ConvertOptions, Msg, as_text, text_or_none
from .stats import FileReport

HARNESS_MARKERS = ("<environment_context>", "# AGENTS.md instructions", "<user_instructions>",
                   "<permissions instructions>", "<collaboration_mode>", "<INSTRUCTIONS>", "<user_shell_command>")
CALL_ITEMS = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"}
OUTPUT_ITEMS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output"}
SKIPPED_ITEMS = {"web_search_call", "image_generation_call", "ghost_snapshot", "agent_message", "compaction"}


def _items_text(content, report: FileReport) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    parts = []
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif item.get("type") in ("input_image", "output_image", "image"):
            report.add("image_omitted")
            parts.append("[image]")
    return "\n\n".join(p for p in parts if p)


def parse_arguments(raw) -> dict:
    """Call arguments as a dict: JSON objects as they are, anything else as {'input': raw}."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"input": raw}
        return value if isinstance(value, dict) else {"input": value}
    return {} if raw is None else {"input": raw}


def _call(item: dict) -> Call:
    kind = item["type"]
    if kind == "custom_tool_call":
        args = {"input": item.get("input", "")}
    elif kind == "local_shell_call":
        action = item.get("action")
        args = action if isinstance(action, dict) else {}
    else:
        args = parse_arguments(item.get("arguments"))
    name = item.get("name") or {"local_shell_call": "local_shell", "tool_search_call": "tool_search"}.get(kind, kind)
    return Call(id=item.get("call_id") or item.get("id"), name=str(name), arguments=args)


def _output(item: dict, report: FileReport) -> Msg:
    if item["type"] == "tool_search_output":
        text = json.dumps(item.get("tools", []), ensure_ascii=False)
    else:
        out = item.get("output")
        text = out if isinstance(out, str) else _items_text(out, report)
    return Msg(role="tool", content=text, call_id=item.get("call_id"))


class _Rollout:
    def __init__(self, opts: ConvertOptions, report: FileReport):
        self.opts, self.report = opts, report
        self.segments: list[list[Msg]] = [[]]
        self.model: str | None = None

    def add(self, msg: Msg) -> None:
        self.segments[-1].append(msg)

    def item(self, item: dict) -> None:
        kind = text_or_none(item.get("type"))
        item = {**item, "type": kind}
        if kind == "message":
            role = item.get("role")
            text = _items_text(item.get("content"), self.report)
            if role == "assistant":
                self.add(Msg(role="assistant", content=text, model=self.model))
            elif role in ("developer", "system"):
                if self.opts.drop_harness_context:
                    self.report.add("harness_context")
                else:
                    self.add(Msg(role="system", content=text))
            elif role == "user":
                if self.opts.drop_harness_context and text.lstrip().startswith(HARNESS_MARKERS):
                    self.report.add("harness_context")
                else:
                    self.add(Msg(role="user", content=text))
            else:
                self.report.add("unknown_message_role")
        elif kind == "reasoning":
            summary, content = item.get("summary"), item.get("content")
            texts = [as_text(s.get("text")) for s in summary if isinstance(s, dict)] if isinstance(summary, list) else []
            texts += [as_text(c.get("text")) for c in content if isinstance(c, dict)] if isinstance(content, list) else []
            text = "\n\n".join(t for t in texts if t.strip())
            if text:
                self.add(Msg(role="assistant", reasoning=text, model=self.model))
        elif kind in CALL_ITEMS:
            self.add(Msg(role="assistant", calls=[_call(item)], model=self.model))
        elif kind in OUTPUT_ITEMS:
            self.add(_output(item, self.report))
        else:
            self.report.skip(f"response_item:{kind}")
            if kind not in SKIPPED_ITEMS:
                self.report.add("unknown_entry_type")

    def compacted(self, payload: dict) -> None:
        if self.opts.compacted:
            self.segments.append([])
        else:
            self.segments = [[]]
        history = payload.get("replacement_history")
        if isinstance(history, list):
            for item in history:
                if isinstance(item, dict):
                    self.item(item)
        elif payload.get("message"):
            self.add(Msg(role="user", content=str(payload["message"])))


def read_codex(path: Path, opts: ConvertOptions, report: FileReport) -> list[Conversation]:
    rollout = _Rollout(opts, report)
    session, tools = path.stem, None
    for _, line in read_jsonl(path, report):
        kind, payload = line.get("type"), line.get("payload")
        if not isinstance(payload, dict):
            report.add("unknown_entry_type")
            continue
        if kind == "response_item":
            rollout.item(payload)
        elif kind == "turn_context":
            rollout.model = payload.get("model") or rollout.model
        elif kind == "session_meta":
            if session == path.stem and payload.get("id"):
                session = str(payload["id"])
            base = payload.get("base_instructions")
            prompt = base.get("text") if isinstance(base, dict) else payload.get("instructions")
            if isinstance(prompt, str) and prompt.strip() and not any(
                    m.role == "system" for m in rollout.segments[-1]):
                if opts.drop_harness_context:
                    report.add("harness_context")
                else:
                    rollout.segments[-1].insert(0, Msg(role="system", content=prompt))
            if isinstance(payload.get("dynamic_tools"), list):
                tools = payload["dynamic_tools"]
        elif kind == "compacted":
            rollout.compacted(payload)
        else:
            report.skip(str(kind))
            if kind not in ("event_msg", "world_state", "inter_agent_communication_metadata"):
                report.add("unknown_entry_type")
    segments = [s for s in rollout.segments if s]
    if not segments:
        return []
    report.sessions += 1
    return [Conversation(source=str(path), format="codex", session=session,
                         part="main" if len(segments) == 1 else f"segment:{i + 1}", messages=msgs, tools=tools)
            for i, msgs in enumerate(segments)]
