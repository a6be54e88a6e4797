"""Make one conversation safe to train on, whatever harness it came from.

The rules, in order:

1. Failed turns: assistant turns that were aborted or errored are dropped (``drop_failed_turns``),
   together with any result of their tool calls; counted as ``aborted_turn`` / ``error_turn``.
2. Consecutive assistant pieces are one turn: Codex writes reasoning, text and each call as separate
   items; two complete turns with no prompt between them (a rare harness glitch) merge the same way.
   A turn with neither text nor calls (e.g. reasoning only) is dropped (``empty_assistant_turn``).
3. Pairing: every tool result is attached to the open assistant turn that called it — by call id, or
   by position when the format repeats or omits ids (OpenAI chat, ShareGPT). Results go right after
   that turn, in call order; a user message that arrived before the last result moves after them.
   A result nobody called is dropped (``tool_result_without_call``). A call that never got a result
   is dropped (``tool_call_without_result``) unless ``keep_dangling_tool_calls`` — templates render a
   call with no answer, but training on it teaches the model to stop mid-task. A turn left with
   neither text nor calls is dropped (``empty_assistant_turn``).
4. Roles alternate as chat templates require: system messages merge into one leading system message
   (a later one becomes user text), consecutive user messages merge, assistant turns before the first
   user message and user messages after the last assistant turn are dropped.
5. Call ids are made unique within the conversation (``id``, ``id_2``, …) and generated where missing,
   so each ``tool`` message names exactly one call of the turn before it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .model import Call, ConvertOptions, Msg
from .stats import FileReport


@dataclass
class Normalized:
    messages: list[dict]
    models: list[str | None]  # per message: the model of an assistant turn, else None
    assistant_turns: int = 0
    tool_calls: Counter = field(default_factory=Counter)


def _drop_failed(msgs: list[Msg], opts: ConvertOptions, report: FileReport) -> list[Msg]:
    out, dropped_calls = [], set()
    answered = {m.call_id for m in msgs if m.role == "tool" and m.call_id}
    for m in msgs:
        if m.role == "assistant" and m.status != "ok" and opts.drop_failed_turns:
            report.add(f"{m.status}_turn")
            for call in m.calls:  # its calls go with it; those never answered are still counted as such
                if call.id and call.id in answered:
                    dropped_calls.add(call.id)
                else:
                    report.add("tool_call_without_result")
            continue
        if m.role == "tool" and m.call_id and m.call_id in dropped_calls:
            report.add("tool_result_of_dropped_turn")
            continue
        out.append(m)
    return out


def _join(a: str, b: str) -> str:
    return f"{a}\n\n{b}" if a.strip() and b.strip() else (a if a.strip() else b)


def _merge_assistants(msgs: list[Msg], report: FileReport) -> list[Msg]:
    out: list[Msg] = []
    for m in msgs:
        prev = out[-1] if out else None
        if prev is not None and prev.role == "assistant" and m.role == "assistant":
            out[-1] = Msg(role="assistant", content=_join(prev.content, m.content),
                          reasoning=_join(prev.reasoning, m.reasoning), calls=prev.calls + m.calls,
                          status=prev.status if prev.status != "ok" else m.status, model=prev.model or m.model)
            continue
        out.append(m)
    kept = []
    for m in out:
        if m.role == "assistant" and not m.content.strip() and not m.calls:
            report.add("empty_assistant_turn")
            continue
        kept.append(m)
    return kept


class _OpenTurn:
    def __init__(self, msg: Msg):
        self.msg = msg
        self.results: list[Msg | None] = [None] * len(msg.calls)

    def complete(self) -> bool:
        return all(r is not None for r in self.results)

    def match(self, result: Msg, by_position: bool) -> int | None:
        open_ = [i for i, r in enumerate(self.results) if r is None]
        if result.call_id is not None:
            for i in open_:
                if self.msg.calls[i].id == result.call_id:
                    return i
            if not by_position:
                return None
        if result.name:
            for i in open_:
                if self.msg.calls[i].name == result.name:
                    return i
        return open_[0] if open_ else None


def _pair(msgs: list[Msg], by_position: bool, opts: ConvertOptions, report: FileReport) -> list[Msg]:
    out: list[Msg] = []
    used: Counter[str] = Counter()
    state: dict = {"turn": None, "deferred": []}

    def unique(call_id: str | None) -> str:
        base = call_id or f"call_{sum(used.values()) + 1}"
        used[base] += 1
        return base if used[base] == 1 else f"{base}_{used[base]}"

    def flush() -> None:
        turn: _OpenTurn | None = state["turn"]
        if turn is not None:
            calls: list[Call] = []
            answers: list[Msg] = []
            for call, result in zip(turn.msg.calls, turn.results, strict=False):
                if result is None and not opts.keep_dangling_tool_calls:
                    report.add("tool_call_without_result")
                    continue
                call = Call(id=unique(call.id), name=call.name, arguments=call.arguments)
                calls.append(call)
                if result is not None:
                    answers.append(Msg(role="tool", content=result.content, call_id=call.id, name=call.name))
            turn.msg.calls = calls
            if turn.msg.content.strip() or calls:
                out.append(turn.msg)
                out.extend(answers)
            else:
                report.add("empty_assistant_turn")
        out.extend(state["deferred"])
        state["turn"], state["deferred"] = None, []

    for m in msgs:
        turn: _OpenTurn | None = state["turn"]
        if m.role == "tool":
            index = turn.match(m, by_position) if turn is not None else None
            if turn is None or index is None:
                report.add("tool_result_without_call")
            else:
                turn.results[index] = m
            continue
        if turn is not None:
            if m.role == "assistant" or turn.complete():
                flush()
            else:
                state["deferred"].append(m)
                continue
        if m.role == "assistant" and m.calls:
            state["turn"] = _OpenTurn(m)
        else:
            out.append(m)
    flush()
    return out


def _alternate(msgs: list[Msg], report: FileReport) -> list[Msg]:
    first_user = next((i for i, m in enumerate(msgs) if m.role == "user" and m.content.strip()), len(msgs))
    out: list[Msg] = []
    for m in msgs[:first_user]:  # before the first prompt: system text is kept, turns without a prompt are not
        if m.role == "system" and m.content.strip():
            if out:
                out[0].content = _join(out[0].content, m.content)
            else:
                out.append(Msg(role="system", content=m.content))
        elif m.role == "assistant":
            report.add("assistant_turn_without_prompt")
    for m in msgs[first_user:]:
        if m.role == "system":
            m = Msg(role="user", content=m.content)
        if m.role == "user" and not m.content.strip():
            continue
        prev = out[-1] if out else None
        if prev is not None and prev.role == m.role == "user":
            prev.content = _join(prev.content, m.content)
            continue
        if prev is not None and prev.role == m.role == "assistant":
            prev.content, prev.reasoning = _join(prev.content, m.content), _join(prev.reasoning, m.reasoning)
            prev.calls = prev.calls + m.calls
            continue
        out.append(m)
    while out and out[-1].role in ("user", "system"):
        if out[-1].role == "user":
            report.add("trailing_user_turn")
        out.pop()
    return out


def _as_dict(m: Msg, opts: ConvertOptions, thinking: Counter) -> dict:
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.call_id, "name": m.name, "content": m.content}
    if m.role != "assistant":
        return {"role": m.role, "content": m.content}
    out: dict = {"role": "assistant", "content": m.content.strip()}
    if m.reasoning.strip():
        if opts.thinking == "keep":
            out["reasoning_content"] = m.reasoning.strip()
            thinking["kept"] += 1
        else:
            thinking["dropped"] += 1
    if m.calls:
        out["tool_calls"] = [{"type": "function", "id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
                             for c in m.calls]
    return out


def normalize(messages: list[Msg], *, by_position: bool, opts: ConvertOptions, report: FileReport,
              thinking: Counter) -> Normalized | None:
    """TRL conversational messages for one conversation, or None (counted) when no assistant turn is left."""
    msgs = _drop_failed(messages, opts, report)
    msgs = _merge_assistants(msgs, report)
    msgs = _pair(msgs, by_position, opts, report)
    msgs = _alternate(msgs, report)
    if not any(m.role == "assistant" for m in msgs):
        report.add("no_assistant_turn")
        return None
    result = Normalized(messages=[_as_dict(m, opts, thinking) for m in msgs],
                        models=[m.model if m.role == "assistant" else None for m in msgs])
    for m in msgs:
        if m.role == "assistant":
            result.assistant_turns += 1
            result.tool_calls.update(c.name for c in m.calls)
    return result
