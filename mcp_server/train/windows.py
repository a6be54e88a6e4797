"""Windows: a conversation longer than ``training.max_length`` split at model-turn boundaries into rows that fit.

Agent sessions run to hundreds of thousands of tokens; training sequences are a few thousand. Cutting a
session (TRL's truncation) trains only its first turns; one row per turn repeats the whole history.
A window instead is a prompt/completion row:
- the prompt holds the session's head (system prompt and the task's first user message; the tools
  travel in the row's ``tools`` column) and the turns just before the window, newest first, within
  ``context_share`` of ``max_length``. When the turn right before the window does not fit whole (a tool
  result of 50,000 characters), it comes with its long texts cut in the middle, marked, to fit;
- the completion holds the next model turns for as long as the row fits; its last turn ends at the
  model's last message (where the model stops to call tools): the results of those calls open the next
  window's context.
The unit is the model turn, not the message: consecutive assistant messages are one turn the model writes
in one go (Gemma 4's shaping puts the text said before calling in a message of its own, and its template
renders it and the call as one model turn), so no window starts or ends between them. A window that ended
on the text piece would teach the model to close its turn after announcing a call; one that started at the
call piece would render a prompt that is not a prefix of prompt + completion (TRL then drops the mismatch).
For the same reason a completion never runs past a user message while the prompt's current exchange holds
reasoning: templates (Qwen 3, Gemma 4) render reasoning only after the last user message, so the prompt
alone would render what prompt + completion does not.
Training uses completion-only loss together with assistant-only loss: only the assistant turns of the
completion are trained, so every assistant turn is trained exactly once and context a window repeats
is never trained again (the mask check verifies both, token by token). A turn whose own messages do
not fit beside the head is dropped and counted by reason.

Like ``maskcheck.py`` this module is embedded verbatim in the training script (standard library only);
token counts come from a ``count(messages, tools) -> int`` function that renders with the training template.
"""

import json
from typing import Any

TOOL_ROLES = ("tool", "ipython")
CUT = "\n[… {n} characters cut by tunepack to fit the training window …]\n"


REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def split_units(messages: list) -> tuple[int, list[tuple[int, int, int, bool]]]:
    """(length of the head, units): a unit is (start, model_end, end, is_assistant) — a model turn (consecutive
    assistant messages, ``start:model_end``) with the tool results after it (through ``end``), or another
    message (``model_end == end``). The head runs through the first user message."""
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    head = first_user + 1 if first_user is not None else next(
        (i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
    units: list[list] = []
    for index in range(head, len(messages)):
        role = messages[index].get("role")
        last = units[-1] if units else None
        if last is not None and role in TOOL_ROLES:
            last[2] = index + 1
        elif last is not None and role == "assistant" and last[3] and last[1] == last[2] == index:
            last[1] = last[2] = index + 1  # the next piece of the same model turn
        else:
            units.append([index, index + 1, index + 1, role == "assistant"])
    return head, [tuple(u) for u in units]


def has_reasoning(message: dict) -> bool:
    return message.get("role") == "assistant" and any(message.get(k) for k in REASONING_KEYS)


class _Planner:
    """Token costs of one conversation's units, measured after the head, and the windows cut from them."""

    def __init__(self, messages, tools, count, max_length: int, context_share: float):
        self.messages, self.tools, self.count, self.max_length = messages, tools, count, max_length
        self.head_len, self.units = split_units(messages)
        self.head = messages[:self.head_len]
        self.base = count(self.head, tools)
        self.full = [self.cost(messages[s:e]) for s, _, e, _ in self.units]  # the unit with its tool results
        self.own = [self.cost(messages[s:m]) if a else f for (s, m, _, a), f in zip(self.units, self.full, strict=False)]
        self.context_budget = int(max_length * context_share)
        self.trimmed = 0

    def cost(self, messages) -> int:
        try:
            return max(1, self.count(self.head + messages, self.tools) - self.base)
        except Exception:  # a template that cannot render these after the head alone: estimate
            return max(1, len(json.dumps(messages, ensure_ascii=False)) // 3)

    def context(self, i: int, room: int) -> list:
        """The messages just before unit ``i`` that fit in ``room`` tokens, the nearest one cut to fit if need be."""
        j, used = i, 0
        while j > 0 and used + self.full[j - 1] <= room:
            j -= 1
            used += self.full[j]
        if j < i:
            return self.messages[self.units[j][0]:self.units[i][0]]
        if i == 0 or room < 64:
            return []
        start, _, end, _ = self.units[i - 1]
        return trim(self.messages[start:end], self.full[i - 1], room)

    def window(self, i: int):
        """(prompt, completion, trained assistant indices, next unit, tokens) for a window from unit ``i``."""
        room = self.max_length - self.base
        context = self.context(i, min(self.context_budget, room - self.own[i]))
        used = self.cost(context) if context else 0
        sealed = reasoning_open(self.head + context)  # the completion must not cross a user message then
        stop = i + 1  # units i..stop-1; every one but the last counts with its tool results
        while stop < len(self.units) and used + sum(self.full[i:stop]) + self.own[stop] <= room:
            if sealed and self.messages[self.units[stop][0]].get("role") == "user":
                break
            stop += 1
        while stop > i + 1 and not self.units[stop - 1][3]:  # a completion ends with a model turn
            stop -= 1
        return self.fit(i, stop, context)

    def fit(self, i: int, stop: int, context: list):
        """Render the planned window; shrink it (later turns, then context) until it really fits."""
        for _ in range(64):
            completion = self.messages[self.units[i][0]:self.units[stop - 1][1]]
            prompt = self.head + context
            try:
                tokens = self.count(prompt + completion, self.tools)
            except Exception:
                tokens = self.max_length + 1
            if tokens <= self.max_length:
                if context and context[-1] is not self.messages[self.units[i][0] - 1]:
                    self.trimmed += 1
                trained = [k for s, m, _, a in self.units[i:stop] if a for k in range(s, m)]
                return prompt, completion, trained, stop, tokens
            if stop > i + 1:
                stop -= 1
                while stop > i + 1 and not self.units[stop - 1][3]:
                    stop -= 1
            elif context:  # drop the oldest context unit (a model turn or message, and the tool results after it)
                cut = 1
                while cut < len(context) and context[0].get("role") == "assistant" == context[cut].get("role"):
                    cut += 1
                while cut < len(context) and context[cut].get("role") in TOOL_ROLES:
                    cut += 1
                context = context[cut:]
            else:
                return None
        return None


def reasoning_open(prompt: list) -> bool:
    """Whether an assistant message after the prompt's last user message carries reasoning (which templates stop
    rendering once a later user message follows)."""
    for message in reversed(prompt):
        if message.get("role") == "user":
            return False
        if has_reasoning(message):
            return True
    return False


def trim(messages: list, tokens: int, room: int) -> list:
    """A copy of ``messages`` whose user and tool texts are cut in the middle to fit about ``room`` tokens."""
    keep = max(0.0, (room - 16 * len(messages)) / max(tokens, 1)) * 0.85
    out = []
    for m in messages:
        content = m.get("content")
        if m.get("role") != "assistant" and isinstance(content, str) and len(content) > 200:
            n = max(100, int(len(content) * keep))
            if n < len(content):
                content = content[:n // 2] + CUT.format(n=len(content) - n) + content[len(content) - n // 2:]
        out.append({**m, "content": content})
    return out


def window_conversation(messages: list, tools, count, max_length: int, context_share: float = 0.5):
    """(windows, dropped, trimmed): windows are (prompt, completion, trained assistant message indices, tokens);
    dropped are (assistant message index, reason, tokens the turn needs with the head); trimmed counts windows
    whose context was cut to fit."""
    plan = _Planner(messages, tools, count, max_length, context_share)
    windows: list = []
    dropped: list[tuple[int, str, int]] = []
    i = 0
    while i < len(plan.units):
        start, model_end, _, is_assistant = plan.units[i]
        if not is_assistant:
            i += 1
            continue
        made = plan.window(i) if plan.base + plan.own[i] <= max_length else None
        if made is None:  # with the tokens the turn needs beside the head
            dropped.extend((k, "turn_longer_than_max_length", plan.base + plan.own[i]) for k in range(start, model_end))
            i += 1
            continue
        prompt, completion, trained, i, tokens = made
        windows.append((prompt, completion, trained, tokens))
    return windows, dropped, plan.trimmed


def window_rows(rows: list, count, max_length: int, *, context_share: float = 0.5, keep_turns: bool = False):
    """(rows, stats) for rows given as (messages, tools, extra columns). Rows that fit become prompt/completion
    rows whole (prompt: through the first user message); longer ones become windows. ``stats`` counts turns
    trained and dropped (by reason, with the length the longest dropped turn needs), rows windowed, windows whose
    context was cut, and the compute multiplier
    (tokens processed ÷ tokens in the conversations). ``keep_turns`` adds each row's trained assistant message
    indices as ``trained_turns``."""
    out: list[dict] = []
    stats: dict[str, Any] = {
        "conversations": 0, "windowed": 0, "windows": 0, "assistant_turns": 0, "turns_trained": 0,
        "turns_dropped": {}, "longest_dropped_turn_tokens": 0, "context_cut": 0, "tokens_in_conversations": 0,
        "tokens_processed": 0,
        "max_length": max_length, "context_share": context_share}
    for messages, tools, extra in rows:
        total = count(messages, tools)
        turns = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
        stats["conversations"] += 1
        stats["assistant_turns"] += len(turns)
        stats["tokens_in_conversations"] += total
        if total <= max_length:
            head_len, _ = split_units(messages)
            windows, dropped, trimmed = [(messages[:head_len], messages[head_len:], turns, total)], [], 0
        else:
            windows, dropped, trimmed = window_conversation(messages, tools, count, max_length, context_share)
            stats["windowed"] += 1
        for prompt, completion, trained, tokens in windows:
            out.append({**extra, "prompt": prompt, "completion": completion, "tools": tools,
                        **({"trained_turns": trained} if keep_turns else {})})
            stats["tokens_processed"] += tokens
            stats["turns_trained"] += len(trained)
        stats["windows"] += len(windows)
        stats["context_cut"] += trimmed
        for _, reason, needed in dropped:
            stats["turns_dropped"][reason] = stats["turns_dropped"].get(reason, 0) + 1
            stats["longest_dropped_turn_tokens"] = max(stats["longest_dropped_turn_tokens"], needed)
    stats["compute_multiplier"] = round(stats["tokens_processed"] / max(stats["tokens_in_conversations"], 1), 3)
    stats["turns_trained_share"] = round(stats["turns_trained"] / max(stats["assistant_turns"], 1), 4)
    return out, stats
