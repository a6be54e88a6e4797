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
import re

GENERATION_MARKER = re.compile(r"\{%-?\s*generation\s*-?%\}")
# TRL training templates that render assistant tool calls and tool results.
TOOL_KEEPING_TEMPLATES = ("qwen3", "qwen2_5", "gptoss", "deepseekv3")
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|return|>", "<|call|>",
                      "<｜end▁of▁sentence｜>")
PROBE_TOOL, PROBE_KEY, PROBE_RESULT = "tp_probe_lookup", "tp_probe_query", "tp_probe_result_text"


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


# --- template ----------------------------------------------------------------------------------

def has_generation_markers(template: str | None) -> bool:
    return bool(template) and GENERATION_MARKER.search(template) is not None


def probe_tool_support(tokenizer, chat_template: str) -> list[str]:
    """Render a probe conversation with a tool call and a result; name what the template drops."""
    tools = [{"type": "function", "function": {
        "name": PROBE_TOOL, "description": "probe",
        "parameters": {"type": "object", "properties": {PROBE_KEY: {"type": "string"}}, "required": [PROBE_KEY]}}}]
    messages = [
        {"role": "user", "content": "probe question"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": PROBE_TOOL, "arguments": {PROBE_KEY: "x"}}}]},
        {"role": "tool", "name": PROBE_TOOL, "content": PROBE_RESULT},
        {"role": "assistant", "content": "probe answer"},
    ]
    try:
        text = tokenizer.apply_chat_template(messages, tools=tools, chat_template=chat_template, tokenize=False)
    except Exception as exc:  # a template that raises on tool messages drops them too
        return [f"tool messages (rendering raised {type(exc).__name__}: {exc})"]
    after_user = text.split("probe question", 1)[-1]
    dropped = []
    if PROBE_TOOL not in after_user or PROBE_KEY not in after_user:
        dropped.append("assistant tool calls")
    if PROBE_RESULT not in after_user:
        dropped.append("tool results")
    return dropped


def require_tool_support(tokenizer, chat_template: str, label: str) -> None:
    dropped = probe_tool_support(tokenizer, chat_template)
    if dropped:
        keepers = ", ".join(f"trl:{name}" for name in TOOL_KEEPING_TEMPLATES)
        raise MaskCheckError(
            f"The chat template '{label}' drops {' and '.join(dropped)}, but the data has tool calls: "
            "the model would never see or learn them.",
            f"set chat_template to a training template that keeps them and matches the model family "
            f"({keepers}), or to a .jinja file that renders tool_calls and tool messages inside "
            "{% generation %} markers.",
        )


def resolve_chat_template(tokenizer, setting: str, fmt: str, model_label: str):
    """(template text, label) for a config's ``chat_template`` setting: 'model', 'trl:<name>' or a
    file path. The model's own template without generation markers is swapped for TRL's training
    variant when TRL knows it; otherwise MaskCheckError says how to fix it."""
    from pathlib import Path

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
    if setting != "model":
        return Path(setting).read_text(encoding="utf-8"), setting
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    if not template:
        raise MaskCheckError(f"The tokenizer of {model_label} has no chat template.",
                             "set chat_template to a TRL training template (e.g. trl:qwen3) or a .jinja file.")
    if fmt == "messages" and not has_generation_markers(template):
        from trl.chat_template_utils import get_training_chat_template

        try:
            patched = get_training_chat_template(tokenizer)
        except ValueError:
            patched = None
        if not patched:
            raise MaskCheckError(
                f"The chat template of {model_label} has no {{% generation %}} markers and TRL has no training "
                "variant for it, so assistant-only loss cannot find the assistant tokens.",
                "set chat_template to a TRL training template of the same family (e.g. trl:qwen3, trl:qwen2_5), "
                "to a .jinja file with {% generation %}...{% endgeneration %} around assistant output, or train "
                "on prompt/completion rows (completion-only loss).",
            )
        return patched, "model (TRL training variant)"
    return template, "model"


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
    kwargs = {"tools": tools, "chat_template": chat_template}
    if n_prompt:
        prompt_ids = tokenizer.apply_chat_template(
            messages[:n_prompt], tokenize=True, add_generation_prompt=True, return_dict=True, **kwargs)["input_ids"]
        out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, **kwargs)
        ids = list(out["input_ids"])
        common = 0
        while common < min(len(ids), len(prompt_ids)) and ids[common] == prompt_ids[common]:
            common += 1
        mask = [0] * common + [1] * (len(ids) - common)
    else:
        out = tokenizer.apply_chat_template(
            messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True, **kwargs)
        ids, mask = list(out["input_ids"]), list(out["assistant_masks"])
    text = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = [tuple(o) for o in enc["offset_mapping"]] if list(enc["input_ids"]) == ids else None
    return ids, mask, text, offsets


def check_row(tokenizer, messages, tools, chat_template: str, n_prompt: int = 0, eot_ids=None) -> list[str]:
    """Problems with one row's mask, each a short sentence naming the turn."""
    ids, mask, text, offsets = tokenize_row(tokenizer, messages, tools, chat_template, n_prompt)
    eot_ids = eot_ids if eot_ids is not None else end_of_turn_ids(tokenizer)
    problems = []
    if 1 not in mask:
        return ["no token is trained (the template produced an empty assistant mask)"]
    if offsets is None:  # cannot map tokens to characters: keep the span-level checks only
        spans = sum(1 for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1]))
        wanted = sum(1 for m in messages[n_prompt:] if m.get("role") == "assistant")
        return [] if spans >= wanted else [f"{wanted} assistant turns but only {spans} trained spans"]

    trained = bytearray(len(text))
    for (start, end), m in zip(offsets, mask):
        if m:
            trained[start:end] = b"\x01" * (end - start)
    allowed = bytearray(len(text))  # characters inside assistant turns: trained tokens may fall here

    def fully_trained(start: int, end: int) -> bool:
        return all(trained[i] or text[i].isspace() for i in range(start, end))

    cursor, region_start = 0, 0
    for index, message in enumerate(messages):
        role = message.get("role")
        is_target = role == "assistant" and index >= n_prompt
        content = _text(message)
        where = f"turn {index} ({role})"
        if content:
            pos = text.find(content, cursor)
            if role == "tool":  # templates that render tool results with |tojson (gpt-oss): the nearer form
                escaped = json.dumps(content, ensure_ascii=False)[1:-1]
                at = text.find(escaped, cursor) if escaped != content else -1
                if at >= 0 and (pos < 0 or at < pos):
                    pos, content = at, escaped
            if pos < 0:
                problems.append(f"{where}: its text is missing from the rendered conversation")
            else:
                end = pos + len(content)
                if is_target and not fully_trained(pos, end):
                    problems.append(f"{where}: part of its text is not trained")
                if not is_target and any(trained[pos:end]):
                    problems.append(f"{where}: {role} tokens are trained")
                cursor = end
        if not is_target:
            region_start = cursor
            continue
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or call
            args = fn.get("arguments")
            needles = [fn.get("name") or ""] + (list(args) if isinstance(args, dict) else [])
            for needle in filter(None, needles):
                pos = text.find(str(needle), cursor)
                if pos < 0:
                    problems.append(f"{where}: tool call part '{needle}' is missing from the rendered text")
                    continue
                if not fully_trained(pos, pos + len(str(needle))):
                    problems.append(f"{where}: tool call part '{needle}' is not trained")
                cursor = pos + len(str(needle))
        eot = next((i for i, (s, _) in enumerate(offsets) if s >= cursor and ids[i] in eot_ids), None)
        if eot is None:
            problems.append(f"{where}: no end-of-turn token follows it")
        else:
            if not mask[eot]:
                problems.append(f"{where}: its end-of-turn token is not trained (the model would not learn to stop)")
            cursor = offsets[eot][1]
            while cursor < len(text) and text[cursor].isspace():  # templates may train the newline after it
                cursor += 1
        allowed[region_start:cursor] = b"\x01" * (cursor - region_start)
        region_start = cursor

    stray = [i for i, ((s, e), m) in enumerate(zip(offsets, mask)) if m and e > s and not any(allowed[s:e])]
    if stray:
        snippet = tokenizer.decode([ids[i] for i in stray[:12]])
        problems.append(f"{len(stray)} trained tokens lie outside assistant turns (e.g. {snippet!r})")
    return problems


def preview(tokenizer, messages, tools, chat_template: str, n_prompt: int = 0) -> str:
    """The rendered row with trained spans wrapped in ⟦ ⟧, for a person or an agent to read."""
    ids, mask, _, _ = tokenize_row(tokenizer, messages, tools, chat_template, n_prompt)
    parts, run, state = [], [], 0
    for token, m in zip(ids + [None], mask + [-1]):
        if m != state:
            if run:
                piece = tokenizer.decode(run)
                parts.append(f"⟦{piece}⟧" if state == 1 else piece)
            run, state = [], m
        if token is not None:
            run.append(token)
    return "".join(parts)


# --- whole dataset -----------------------------------------------------------------------------

def check_dataset(tokenizer, rows, *, fmt: str, chat_template: str, template_label: str, max_length: int,
                  allow_truncation: bool = False, sample: int = 256,
                  messages_column: str = "messages", tools_column: str = "tools") -> dict:
    """Run every check; return the report or raise MaskCheckError with the fix."""
    rows = list(rows)
    if not rows:
        raise MaskCheckError("The training split has no rows.", "point data.path at a file with at least one row.")
    missing = rows_without_assistant(rows, fmt, messages_column, tools_column)
    if missing:
        shown = ", ".join(map(str, missing[:20])) + (" …" if len(missing) > 20 else "")
        raise MaskCheckError(
            f"{len(missing)} of {len(rows)} rows have no assistant turn to train on (row indices: {shown}).",
            "drop those rows or give each an assistant message with content or tool_calls; "
            "SFT only learns from assistant turns.",
        )
    convs = [conversation(r, fmt, messages_column, tools_column) for r in rows]
    if fmt == "messages" and not has_generation_markers(chat_template):
        raise MaskCheckError(
            f"The chat template '{template_label}' has no {{% generation %}} markers, so assistant tokens "
            "cannot be told apart from the rest.",
            "set chat_template to a TRL training template for the model family (e.g. trl:qwen3) or to a "
            ".jinja file with {% generation %}…{% endgeneration %} around assistant output.",
        )
    if any(m.get("tool_calls") or m.get("role") == "tool" for msgs, _, _ in convs for m in msgs):
        require_tool_support(tokenizer, chat_template, template_label)

    eot_ids = end_of_turn_ids(tokenizer)
    lengths, truncated, dropped, problems = [], [], [], []
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
                tokenizer, messages, tools, chat_template, n_prompt, eot_ids))
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    report = {
        "rows": len(rows), "rows_checked": min(sample, len(rows)), "format": fmt, "chat_template": template_label,
        "trained_token_share": round(trained_tokens / max(total_tokens, 1), 4),
        "trained_tokens": trained_tokens, "total_tokens": total_tokens,
        "longest_row_tokens": lengths[longest], "longest_row_index": longest, "max_length": max_length,
        "rows_truncated": len(truncated), "rows_dropped": len(dropped), "problems": problems[:50],
    }
    if problems:
        raise MaskCheckError(
            f"The assistant mask is wrong in {len(problems)} places, e.g. {'; '.join(problems[:3])}.",
            "use a chat template whose {% generation %} block covers exactly the assistant output and its "
            "end-of-turn token (e.g. trl:qwen3), then re-run; `tunepack` prints a mask preview of row 0.",
        )
    if (truncated or dropped) and not allow_truncation:
        raise MaskCheckError(
            f"training.max_length={max_length} cuts trained assistant tokens: {len(truncated)} rows would be "
            f"truncated and {len(dropped)} silently dropped by TRL (longest row: {lengths[longest]} tokens, "
            f"row {longest}).",
            f"raise training.max_length to at least {lengths[longest]}, filter out the long rows, "
            "or set data.allow_truncation: true to accept the loss.",
        )
    return report
