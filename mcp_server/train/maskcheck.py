"""The mask check: prove, token by token, that SFT trains on what it should and nothing else.

This module is the heart of SFT in tunepack and it is used twice: imported by tunepack (data
inspection, tests) and embedded verbatim into every rendered training script, which must stay
self-contained. So it imports only the standard library; tokenizers are passed in.

For each checked row it renders the conversation with the chat template, gets the assistant mask
the same way TRL does (``return_assistant_tokens_mask`` for conversations; the prompt/completion
split for prompt-completion rows), maps tokens to characters, and checks that
- every assistant turn's text, every tool call's name and argument keys, and the turn's
  end-of-turn token are trained;
- no token of a system, user or tool message (nor any other token outside assistant turns) is
  trained.
Over all rows it counts rows whose trained tokens fall past ``max_length`` (TRL cuts them, or
silently drops the row when nothing trained is left) and reports the longest row.
"""

from __future__ import annotations

import json

try:  # on the host; a rendered script embeds chat_templates.py just above this module instead
    from .chat_templates import TemplateChoiceError, has_generation_markers, pick_training_template, probe_tool_drops
except ImportError:
    pass

# Training templates that render assistant tool calls and tool results (TRL's and tunepack's own).
TOOL_KEEPING_TEMPLATES = ("trl:qwen3", "trl:qwen2_5", "trl:gptoss", "trl:deepseekv3", "tunepack:gemma4*",
                          "tunepack:llama3_1", "tunepack:llama3_2")
# Tokens that end what the model writes: a turn's end, or the hand-over to tools (Gemma 4's
# <|tool_response>, Llama 3.1's <|eom_id|>, gpt-oss's <|call|>).
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<turn|>", "<|tool_response>",
                      "<|end|>", "<|return|>", "<|call|>", "<｜end▁of▁sentence｜>")
TOOL_ROLES = ("tool", "ipython")
PROBE_TOOL, PROBE_KEY = "tp_probe_lookup", "tp_probe_query"
PROBE_TEXT, PROBE_RESULT = "tp_probe_text", "tp_probe_result_text"
PREFIX_PROBLEM = "the prompt rendered alone ends in"  # TRL's prefix check, failed


class MaskCheckError(Exception):
    """The data or the chat template cannot be trained on as configured."""

    def __init__(self, problem: str, fix: str):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem} Fix: {fix}")


# --- rows --------------------------------------------------------------------------------------

def detect_format(columns, messages_column: str = "messages") -> str:
    columns = set(columns)
    if messages_column in columns:
        return "messages"
    if {"prompt", "completion"} <= columns:
        return "prompt_completion"
    raise MaskCheckError(
        f"The dataset has the columns {sorted(columns)}: neither a '{messages_column}' column "
        "(conversations) nor 'prompt' + 'completion' columns.",
        "convert the rows to TRL conversational format ({'messages': [...], 'tools': [...]}), "
        "or set data.messages_column to the column holding the conversation.",
    )


def _loads(value):
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _clean_message(message: dict) -> dict:
    """Drop keys that Arrow filled with None when it unified the rows' schemas."""
    out = {k: v for k, v in message.items() if v is not None}
    calls = out.get("tool_calls")
    if calls:
        cleaned = []
        for call in calls:
            fn = dict(call.get("function") or call)
            args = _loads(fn.get("arguments"))
            if isinstance(args, dict):
                args = {k: v for k, v in args.items() if v is not None}
            fn["arguments"] = args if args is not None else {}
            cleaned.append({"type": "function", "function": fn})
        out["tool_calls"] = cleaned
    return out


def conversation(row: dict, fmt: str, messages_column: str = "messages", tools_column: str = "tools"):
    """Return (messages, tools, n_prompt) for a row; n_prompt > 0 marks a prompt/completion row."""
    tools = _loads(row.get(tools_column)) or None
    if fmt == "messages":
        messages = _loads(row.get(messages_column)) or []
        return [_clean_message(m) for m in messages], tools, 0
    prompt, completion = _loads(row.get("prompt")), _loads(row.get("completion"))
    if isinstance(prompt, str):
        prompt = [{"role": "user", "content": prompt}]
    if isinstance(completion, str):
        completion = [{"role": "assistant", "content": completion}]
    prompt = [_clean_message(m) for m in prompt or []]
    return prompt + [_clean_message(m) for m in completion or []], tools, len(prompt)


def rows_without_assistant(rows, fmt: str, messages_column: str = "messages", tools_column: str = "tools") -> list[int]:
    """Indices of rows that hold no assistant turn with content or tool calls."""
    bad = []
    for index, row in enumerate(rows):
        messages, _, n_prompt = conversation(row, fmt, messages_column, tools_column)
        trained = messages[n_prompt:] if n_prompt else messages
        if not any(
            m.get("role") == "assistant" and (_text(m) or m.get("tool_calls")) for m in trained
        ):
            bad.append(index)
    return bad


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    content = content or ""
    if message.get("role") == "assistant" and "</think>" in content:
        content = content.split("</think>")[-1]
    return content.strip()


# --- template ---------------------------------------------------------------------------------

def require_tool_support(tokenizer, chat_template: str, label: str) -> None:
    dropped = probe_tool_drops(tokenizer, chat_template)
    if dropped:
        raise MaskCheckError(
            f"The chat template '{label}' drops {' and '.join(dropped)}, but the data has tool calls: "
            "the model would never see or learn them.",
            "set chat_template to a training template of the model's family that keeps them "
            f"({', '.join(TOOL_KEEPING_TEMPLATES)}), or to a .jinja file that renders tool_calls and tool "
            "messages with {% generation %} markers around the assistant's part.",
        )


def rows_with_tools(rows, fmt: str, messages_column: str = "messages", tools_column: str = "tools") -> int:
    """How many rows hold tool calls or tool results (they need a template that renders them)."""
    return sum(1 for row in rows if any(
        m.get("tool_calls") or m.get("role") in TOOL_ROLES
        for m in conversation(row, fmt, messages_column, tools_column)[0]))


def resolve_chat_template(tokenizer, setting: str, fmt: str, model_label: str, *, needs_tools: bool = True,
                          packaged: dict | None = None):
    """(template text, label) for a config's ``chat_template``: 'model', 'trl:<name>', 'tunepack:<name>' or
    a file path. A marker-less model template is swapped for a training variant (chat_templates.py)."""
    from pathlib import Path

    packaged = packaged or {}
    if setting.startswith("trl:"):
        import trl

        name = setting[4:]
        folder = Path(trl.__file__).parent / "chat_templates"
        path = folder / f"{name}_training.jinja"
        if not path.is_file():
            known = sorted(p.name[: -len("_training.jinja")] for p in folder.glob("*_training.jinja"))
            raise MaskCheckError(f"TRL {trl.__version__} has no training chat template '{name}'.",
                                 "set chat_template to one of: " + ", ".join(f"trl:{k}" for k in known))
        return path.read_text(encoding="utf-8"), setting
    if setting.startswith("tunepack:"):
        if setting[9:] not in packaged:
            raise MaskCheckError(f"tunepack has no training chat template '{setting[9:]}'.",
                                 "set chat_template to one of: " + ", ".join(f"tunepack:{k}" for k in sorted(packaged)))
        return packaged[setting[9:]], setting
    if setting != "model":
        return Path(setting).read_text(encoding="utf-8"), setting
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    if not template:
        raise MaskCheckError(f"The tokenizer of {model_label} has no chat template.",
                             "set chat_template to a training template (e.g. trl:qwen3, tunepack:gemma4_v5) or a .jinja file.")
    if has_generation_markers(template):
        return template, "model"
    try:
        return pick_training_template(tokenizer, template, model_label, needs_tools=needs_tools, packaged=packaged)
    except TemplateChoiceError as exc:
        if fmt == "messages":
            raise MaskCheckError(exc.problem, exc.fix) from None
        return template, "model (completion-only loss: no training variant with generation markers)"

# --- one row -----------------------------------------------------------------------------------

# --- one row -----------------------------------------------------------------------------------

def end_of_turn_ids(tokenizer) -> set[int]:
    ids = set()
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    vocab = tokenizer.get_vocab()
    ids.update(vocab[t] for t in END_OF_TURN_TOKENS if t in vocab)
    return ids


def tokenize_row(tokenizer, messages, tools, chat_template: str, n_prompt: int = 0):
    """Token ids, the 0/1 trained mask, the rendered text and each token's character span."""
    return _tokenize_row(tokenizer, messages, tools, chat_template, n_prompt)[:4]


def _tokenize_row(tokenizer, messages, tools, chat_template: str, n_prompt: int = 0):
    """``tokenize_row`` and, for a prompt/completion row, the end of the prompt (rendered with the generation prompt)
    that prompt + completion does not start with ("" when the prompt is a prefix, as TRL expects)."""
    kwargs = {"tools": tools, "chat_template": chat_template}
    gap = ""
    if n_prompt:  # completion-only loss, and assistant-only too where the template marks the assistant (as TRL)
        prompt_ids = tokenizer.apply_chat_template(
            messages[:n_prompt], tokenize=True, add_generation_prompt=True, return_dict=True, **kwargs)["input_ids"]
        marked = has_generation_markers(chat_template)
        out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=marked, **kwargs)
        ids = list(out["input_ids"])
        common = 0
        while common < min(len(ids), len(prompt_ids)) and ids[common] == prompt_ids[common]:
            common += 1
        assistant = list(out["assistant_masks"]) if marked else [1] * len(ids)
        mask = [0] * common + assistant[common:]
        if common < len(prompt_ids):  # TRL leaves this end of the prompt out of the training sequence
            gap = tokenizer.decode(list(prompt_ids)[common:]) or "?"
    else:
        out = tokenizer.apply_chat_template(
            messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True, **kwargs)
        ids, mask = list(out["input_ids"]), list(out["assistant_masks"])
    text = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = [tuple(o) for o in enc["offset_mapping"]] if list(enc["input_ids"]) == ids else None
    return ids, mask, text, offsets, gap


def turn_layout(tokenizer, chat_template: str) -> tuple[str, ...]:
    """The order in which the template renders a tool-calling assistant turn's parts: its text
    ("content"), its calls ("calls") and the results that answer them ("results"). Most templates
    give content, calls, results; Gemma 4 writes the results inside the model turn, before the text."""
    messages = [
        {"role": "user", "content": "probe question"},
        {"role": "assistant", "content": PROBE_TEXT, "tool_calls": [
            {"id": "p1", "type": "function", "function": {"name": PROBE_TOOL, "arguments": {PROBE_KEY: "x"}}}]},
        {"role": "tool", "tool_call_id": "p1", "name": PROBE_TOOL, "content": PROBE_RESULT},
        {"role": "assistant", "content": "probe answer"},
    ]
    try:
        text = tokenizer.apply_chat_template(messages, chat_template=chat_template, tokenize=False)
    except Exception:  # templates that refuse tool messages: plain turns only
        return ("content", "calls", "results")
    text = text.split("probe question", 1)[-1]
    found = {part: text.find(needle) for part, needle in
             (("content", PROBE_TEXT), ("calls", PROBE_TOOL), ("results", PROBE_RESULT))}
    order = sorted((pos, part) for part, pos in found.items() if pos >= 0)
    return tuple(part for _, part in order) + tuple(p for p in ("content", "calls", "results") if found[p] < 0)


def _groups(messages) -> list[tuple[int, list[int]]]:
    """Each non-tool message with the tool messages that follow it (they answer its calls)."""
    groups: list[tuple[int, list[int]]] = []
    for index, message in enumerate(messages):
        if message.get("role") in TOOL_ROLES and groups:
            groups[-1][1].append(index)
        else:
            groups.append((index, []))
    return groups


class _RowCheck:
    """One rendered row, checked in two passes: locate every message's parts in the template's order
    (``turn_layout``), then walk them in text order. A run of the model's own parts (text, tool calls,
    possibly across messages the template joins into one turn) must end in a trained end-of-turn token
    before the next context part; the run and its stop token are the only places trained tokens may be."""

    def __init__(self, tokenizer, messages, ids, mask, text, offsets, n_prompt, eot_ids, layout) -> None:
        self.tok, self.messages, self.ids, self.mask, self.text = tokenizer, messages, ids, mask, text
        self.offsets, self.n_prompt, self.eot_ids, self.layout = offsets, n_prompt, eot_ids, layout
        self.trained = bytearray(len(text))
        for (start, end), m in zip(offsets, mask, strict=False):
            if m:
                self.trained[start:end] = b"\x01" * (end - start)
        self.allowed = bytearray(len(text))  # where trained tokens may fall: the model's own output
        self.problems: list[str] = []
        self.parts: list[tuple[int, int, bool, int, int]] = []  # start, end, generated?, message, group start

    def fully_trained(self, start: int, end: int) -> bool:
        return all(self.trained[i] or self.text[i].isspace() for i in range(start, end))

    def problem(self, index: int, what: str) -> None:
        self.problems.append(f"turn {index} ({self.messages[index].get('role')}): {what}")

    # --- pass 1: locate ---

    def locate(self, index: int, cursor: int):
        """(start, end) of message ``index``'s text at or after ``cursor``; None when it has none."""
        message = self.messages[index]
        content = _text(message)
        if not content:
            return None
        pos = self.text.find(content, cursor)
        if message.get("role") in TOOL_ROLES:  # templates that render results with |tojson: the nearer form
            escaped = json.dumps(content, ensure_ascii=False)[1:-1]
            at = self.text.find(escaped, cursor) if escaped != content else -1
            if at >= 0 and (pos < 0 or at < pos):
                pos, content = at, escaped
        if pos < 0:
            self.problem(index, "its text is missing from the rendered conversation")
            return None
        return pos, pos + len(content)

    def context(self, index: int, cursor: int, group_start: int) -> int:
        span = self.locate(index, cursor)
        if span is None:
            return cursor
        if any(self.trained[span[0]:span[1]]):
            role = self.messages[index].get("role")
            self.problem(index, f"{role} tokens are trained")
        self.parts.append((*span, False, index, group_start))
        return span[1]

    def calls(self, index: int, cursor: int, group_start: int) -> int:
        for call in self.messages[index].get("tool_calls") or []:
            fn = call.get("function") or call
            name, args = str(fn.get("name") or ""), fn.get("arguments")
            at = self.text.find(name, cursor) if name else cursor
            if at < 0:
                self.problem(index, f"tool call '{name}' is missing from the rendered text")
                continue
            end = at + len(name)
            if not self.fully_trained(at, end):
                self.problem(index, f"tool call part '{name}' is not trained")
            for key in (args if isinstance(args, dict) else []):  # templates may sort keys: search from the name
                pos = self.text.find(str(key), at)
                if pos < 0:
                    self.problem(index, f"tool call part '{key}' is missing from the rendered text")
                elif not self.fully_trained(pos, pos + len(str(key))):
                    self.problem(index, f"tool call part '{key}' is not trained")
                else:
                    end = max(end, pos + len(str(key)))
            self.parts.append((at, end, True, index, group_start))
            cursor = end
        return cursor

    def group(self, head: int, answers: list[int], cursor: int) -> int:
        start = cursor
        if not (self.messages[head].get("role") == "assistant" and head >= self.n_prompt):
            for index in [head, *answers]:
                cursor = self.context(index, cursor, start)
            return cursor
        located = len(self.parts)
        for part in self.layout:
            if part == "content":
                span = self.locate(head, cursor)
                if span:
                    if not self.fully_trained(*span):
                        self.problem(head, "part of its text is not trained")
                    self.parts.append((*span, True, head, start))
                    cursor = span[1]
            elif part == "calls":
                cursor = self.calls(head, cursor, start)
            elif answers:  # results come after the model hands over: skip its stop token and the call's values
                eot = self.eot_between(cursor, len(self.text)) if len(self.parts) > located else None
                cursor = self.offsets[eot][1] if eot is not None else cursor
                for index in answers:
                    cursor = self.context(index, cursor, start)
        if not any(p[2] for p in self.parts[located:]):  # an empty turn still has to stop
            self.parts.insert(located, (start, start, True, head, start))
        return cursor

    # --- pass 2: stops and the region the model writes ---

    def eot_between(self, start: int, stop: int):
        return next((i for i, (s, _) in enumerate(self.offsets)
                     if start <= s < stop and self.ids[i] in self.eot_ids), None)

    def close(self, index: int, region: int, after: int, limit: int) -> None:
        eot = self.eot_between(after, limit)
        if eot is None:
            self.problem(index, "no end-of-turn token follows it")
            end = after
        else:
            if not self.mask[eot]:
                self.problem(index, "its end-of-turn token is not trained (the model would not learn to stop)")
            end = self.offsets[eot][1]
            while end < len(self.text) and self.text[end].isspace():  # templates may train the newline after it
                end += 1
        self.allowed[region:end] = b"\x01" * max(0, end - region)

    def stops(self) -> None:
        # last_index: the message of the last generated part (-1: none yet; only read once a run is open)
        open_run, region, last_end, last_index, context_end = False, 0, 0, -1, 0
        for start, end, generated, index, group_start in sorted(self.parts, key=lambda p: (p[0], p[1])):
            if not generated:
                if open_run:
                    self.close(last_index, region, last_end, start)
                open_run, context_end = False, max(context_end, end)
                continue
            if not open_run:
                open_run, region = True, max(group_start, context_end)
            elif index != last_index:  # the next message: a stop between them must be trained; none = one turn
                eot = self.eot_between(last_end, start)
                if eot is not None and not self.mask[eot]:
                    self.problem(last_index, "its end-of-turn token is not trained (the model would not learn to stop)")
            last_end, last_index = max(last_end, end) if index == last_index else end, index
        if open_run:
            self.close(last_index, region, last_end, len(self.text))

    def run(self) -> list[str]:
        cursor = 0
        for head, answers in _groups(self.messages):
            cursor = self.group(head, answers, cursor)
        self.stops()
        stray = [i for i, ((s, e), m) in enumerate(zip(self.offsets, self.mask, strict=False))
                 if m and e > s and not any(self.allowed[s:e])]
        if stray:
            snippet = self.tok.decode([self.ids[i] for i in stray[:12]])
            self.problems.append(f"{len(stray)} trained tokens lie outside assistant turns (e.g. {snippet!r})")
        return self.problems


def check_row(tokenizer, messages, tools, chat_template: str, n_prompt: int = 0, eot_ids=None,
              layout=None) -> list[str]:
    """Problems with one row's mask, each a short sentence naming the turn."""
    ids, mask, text, offsets, gap = _tokenize_row(tokenizer, messages, tools, chat_template, n_prompt)
    if 1 not in mask:
        return ["no token is trained (the template produced an empty assistant mask)"]
    if gap:
        return [f"{PREFIX_PROBLEM} {gap!r}, which prompt + completion does not render there (TRL drops it and trains "
                "on a context the model never sees at inference): the row is cut inside a model turn, or after an "
                "exchange whose reasoning the template stops rendering once the completion's user message follows"]
    if offsets is None:  # cannot map tokens to characters: keep the span-level checks only
        spans = sum(1 for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1]))
        wanted = sum(1 for m in messages[n_prompt:] if m.get("role") == "assistant")
        return [] if spans >= wanted else [f"{wanted} assistant turns but only {spans} trained spans"]
    eot_ids = eot_ids if eot_ids is not None else end_of_turn_ids(tokenizer)
    layout = layout or turn_layout(tokenizer, chat_template)
    return _RowCheck(tokenizer, messages, ids, mask, text, offsets, n_prompt, eot_ids, layout).run()

def preview(tokenizer, messages, tools, chat_template: str, n_prompt: int = 0) -> str:
    """The rendered row with trained spans wrapped in ⟦ ⟧, for a person or an agent to read."""
    ids, mask, _, _ = tokenize_row(tokenizer, messages, tools, chat_template, n_prompt)
    parts: list[str] = []
    run: list[int] = []
    state = 0
    for token, m in zip(ids + [None], mask + [-1], strict=False):
        if m != state:
            if run:
                piece = tokenizer.decode(run)
                parts.append(f"⟦{piece}⟧" if state == 1 else piece)
            run, state = [], m
        if token is not None:
            run.append(token)
    return "".join(parts)


def expected_masks(tokenizer, rows, *, fmt: str, chat_template: str, sample: int = 256,
                   messages_column: str = "messages", tools_column: str = "tools") -> dict:
    """{token ids of a row: its 0/1 trained mask} for the first ``sample`` rows — what a packed batch must train."""
    out = {}
    for index, row in enumerate(rows):
        if index >= sample:
            break
        messages, tools, n_prompt = conversation(row, fmt, messages_column, tools_column)
        ids, mask, _, _ = tokenize_row(tokenizer, messages, tools, chat_template, n_prompt)
        out[tuple(ids)] = mask
    return out


# --- whole dataset -----------------------------------------------------------------------------

def _refuse_untrainable_rows(rows: list, fmt: str, messages_column: str, tools_column: str) -> None:
    missing = rows_without_assistant(rows, fmt, messages_column, tools_column)
    if missing:
        shown = ", ".join(map(str, missing[:20])) + (" …" if len(missing) > 20 else "")
        raise MaskCheckError(
            f"{len(missing)} of {len(rows)} rows have no assistant turn to train on (row indices: {shown}).",
            "drop those rows or give each an assistant message with content or tool_calls; "
            "SFT only learns from assistant turns.",
        )


def _refuse_template(tokenizer, convs: list, fmt: str, chat_template: str, template_label: str) -> None:
    """A template that cannot mark the assistant's tokens, or cannot carry the tool calls the rows hold."""
    if fmt == "messages" and not has_generation_markers(chat_template):
        raise MaskCheckError(
            f"The chat template '{template_label}' has no {{% generation %}} markers, so assistant tokens "
            "cannot be told apart from the rest.",
            "set chat_template to model (tunepack then picks a training variant of the model's own template), "
            "to a training template of the model's family (e.g. trl:qwen3, tunepack:gemma4_v5) or to a .jinja "
            "file with {% generation %}…{% endgeneration %} around assistant output.",
        )
    if any(m.get("tool_calls") or m.get("role") in TOOL_ROLES for msgs, _, _ in convs for m in msgs):
        require_tool_support(tokenizer, chat_template, template_label)


def _raise_on_findings(problems: list[str], truncated: list[int], dropped: list[int], lengths: list[int],
                       max_length: int, allow_truncation: bool) -> None:
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    cut = [p for p in problems if PREFIX_PROBLEM in p]
    if cut:
        raise MaskCheckError(
            f"{len(cut)} prompt/completion rows are cut where the chat template does not end a turn, e.g. {cut[0]}.",
            "cut rows between model turns (tunepack's windows and `traces convert --rows turn` do: consecutive "
            "assistant messages are one turn), or give whole conversations as messages rows.",
        )
    if problems:
        raise MaskCheckError(
            f"The assistant mask is wrong in {len(problems)} places, e.g. {'; '.join(problems[:3])}.",
            "use a chat template whose {% generation %} block covers exactly the assistant output and its "
            "end-of-turn token (e.g. trl:qwen3, or chat_template: model for a family tunepack knows), then "
            "re-run; `tunepack data preview CONFIG` shows which tokens of a row are trained.",
        )
    if (truncated or dropped) and not allow_truncation:
        raise MaskCheckError(
            f"training.max_length={max_length} cuts trained assistant tokens: {len(truncated)} rows would be "
            f"truncated and {len(dropped)} silently dropped by TRL (longest row: {lengths[longest]} tokens, "
            f"row {longest}).",
            f"raise training.max_length to at least {lengths[longest]}, filter out the long rows, "
            "or set data.allow_truncation: true to accept the loss.",
        )


def check_dataset(tokenizer, rows, *, fmt: str, chat_template: str, template_label: str, max_length: int,
                  allow_truncation: bool = False, sample: int = 256,
                  messages_column: str = "messages", tools_column: str = "tools") -> dict:
    """Run every check; return the report or raise MaskCheckError with the fix."""
    rows = list(rows)
    if not rows:
        raise MaskCheckError("The training split has no rows.", "point data.path at a file with at least one row.")
    _refuse_untrainable_rows(rows, fmt, messages_column, tools_column)
    convs = [conversation(r, fmt, messages_column, tools_column) for r in rows]
    _refuse_template(tokenizer, convs, fmt, chat_template, template_label)
    eot_ids, layout = end_of_turn_ids(tokenizer), turn_layout(tokenizer, chat_template)
    lengths: list[int] = []
    truncated: list[int] = []
    dropped: list[int] = []
    problems: list[str] = []
    trained_tokens = total_tokens = 0
    for index, (messages, tools, n_prompt) in enumerate(convs):
        ids, mask, _, _ = tokenize_row(tokenizer, messages, tools, chat_template, n_prompt)
        lengths.append(len(ids))
        trained_tokens += sum(mask)
        total_tokens += len(ids)
        if len(ids) > max_length and 1 in mask[max_length:]:
            (truncated if 1 in mask[:max_length] else dropped).append(index)
        if index < sample:
            problems.extend(f"row {index}, {p}" for p in check_row(
                tokenizer, messages, tools, chat_template, n_prompt, eot_ids, layout))
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    report = {
        "rows": len(rows), "rows_checked": min(sample, len(rows)), "format": fmt, "chat_template": template_label,
        "trained_token_share": round(trained_tokens / max(total_tokens, 1), 4),
        "trained_tokens": trained_tokens, "total_tokens": total_tokens,
        "longest_row_tokens": lengths[longest], "longest_row_index": longest, "max_length": max_length,
        "rows_truncated": len(truncated), "rows_dropped": len(dropped), "problems": problems[:50],
    }
    _raise_on_findings(problems, truncated, dropped, lengths, max_length, allow_truncation)
    return report
