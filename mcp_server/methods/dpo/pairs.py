"""Preference pairs for DPO: rows ``{prompt, chosen, rejected[, tools]}`` whose three parts are message lists
(conversational, tool calls and tool results allowed), checked here and cut where the two answers part.

    problems = pair_problems(row)                 # [] for a good row, else short sentences
    row = cut_pair(row)                           # the shared opening of chosen and rejected moves into the prompt
    ids = pair_tokens(tokenizer, row, template)   # prompt ids, each answer's ids and its 0/1 loss mask

The loss mask is the SFT mask of tunepack (maskcheck.tokenize_row on prompt + answer): the prompt, user and tool
messages carry no loss, only the assistant's own tokens do, whole model turns with their end-of-turn token.
Standard library only: embedded verbatim in templates/dpo_train.py.j2 (after maskcheck.py, whose tokenize_row
it uses; tokenizers are passed in).
"""

from __future__ import annotations

import json

try:  # on the host; the rendered script embeds maskcheck.py above this module instead
    from ...train.maskcheck import tokenize_row
except ImportError:
    pass

PAIR_ROLES = ("system", "user", "assistant", "tool")


def _messages(value):
    return json.loads(value) if isinstance(value, str) and value.lstrip().startswith("[") else value


def _bad_messages(name: str, value) -> str | None:
    if not isinstance(value, list) or not value:
        return (f"{name} is {type(value).__name__ if value is not None else 'missing'}, not a non-empty list of "
                "messages")
    for k, message in enumerate(value):
        if not isinstance(message, dict) or message.get("role") not in PAIR_ROLES:
            return f"{name}[{k}] is not a message with a role among {', '.join(PAIR_ROLES)}"
    return None


def pair_problems(row: dict) -> list[str]:
    """What is wrong with one preference row (empty: nothing)."""
    if not isinstance(row, dict):
        return ["the row is not an object"]
    problems = [p for p in (_bad_messages(k, _messages(row.get(k))) for k in ("prompt", "chosen", "rejected")) if p]
    if problems:
        return problems
    prompt, chosen, rejected = (_messages(row[k]) for k in ("prompt", "chosen", "rejected"))
    if not any(m.get("role") == "user" for m in prompt):
        problems.append("the prompt holds no user message")
    for name, answer in (("chosen", chosen), ("rejected", rejected)):
        if not any(m.get("role") == "assistant" and (m.get("content") or m.get("tool_calls")) for m in answer):
            problems.append(f"{name} holds no assistant message with content or tool calls")
    if chosen == rejected:
        problems.append("chosen and rejected are the same answer (no preference to learn)")
    tools = _messages(row.get("tools"))
    if tools not in (None, []) and not isinstance(tools, list):
        problems.append("tools is not a list of JSON schemas")
    return problems


def cut_pair(row: dict) -> dict:
    """The row with the messages chosen and rejected share at their start moved to the end of the prompt, so both
    answers begin with the assistant turn where they differ (nothing is trained twice, and the shared history is
    context, as SFT treats it)."""
    prompt, chosen, rejected = (list(_messages(row[k])) for k in ("prompt", "chosen", "rejected"))
    shared = 0
    while shared < min(len(chosen), len(rejected)) - 1 and chosen[shared] == rejected[shared]:
        shared += 1
    while shared and chosen[shared].get("role") != "assistant":  # answers start with the model's turn
        shared -= 1
    return {**row, "prompt": prompt + chosen[:shared], "chosen": chosen[shared:], "rejected": rejected[shared:]}


def pair_tokens(tokenizer, row: dict, chat_template: str) -> dict:
    """``prompt_ids`` and, for chosen and rejected, their ids after the prompt and the 0/1 loss mask over them
    (1 = an assistant token). The prompt ends where the two rendered sequences and the prompt rendered with the
    generation prompt stop agreeing, as TRL's DPOTrainer cuts it."""
    prompt = _messages(row["prompt"])
    tools = _messages(row.get("tools")) or None
    out = {}
    rendered = {}
    for answer in ("chosen", "rejected"):
        messages = prompt + _messages(row[answer])
        ids, mask, _, _ = tokenize_row(tokenizer, messages, tools, chat_template, n_prompt=len(prompt))
        rendered[answer] = (ids, mask)
    prompt_ids = tokenizer.apply_chat_template(prompt, tools=tools, chat_template=chat_template, tokenize=True,
                                               add_generation_prompt=True, return_dict=True)["input_ids"]
    cut = len(prompt_ids)
    for ids, _ in rendered.values():
        same = 0
        while same < min(cut, len(ids)) and ids[same] == prompt_ids[same]:
            same += 1
        cut = same
    out["prompt_ids"] = list(prompt_ids[:cut])
    for answer, (ids, mask) in rendered.items():
        out[f"{answer}_ids"] = list(ids[cut:])
        out[f"{answer}_mask"] = [int(m) for m in mask[cut:]]
    return out


def collated_loss_masks(examples: list[dict], max_length: int | None) -> list[list[int]]:
    """Each sequence's loss mask in the layout of TRL's DataCollatorForPreference (the chosen sequences, then the
    rejected ones; the prompt's zeros, then the answer's mask; cut at ``max_length`` from the start), before
    padding: the script multiplies TRL's completion mask by it, so only the answer's assistant tokens train."""
    masks = [[0] * len(e["prompt_ids"]) + list(e[f"{answer}_mask"]) for answer in ("chosen", "rejected")
             for e in examples]
    return [m[:max_length] if max_length is not None else m for m in masks]
