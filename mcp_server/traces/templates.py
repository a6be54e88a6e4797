"""Shape rows for the training chat template they will be rendered with.

The training templates that carry tool calls (TRL's four, tunepack's Gemma 4 and Llama 3.x) each have their
own rules:

- ``qwen3``: reasoning goes in ``reasoning_content`` and is rendered inside ``<think>``; rows stay as they are;
- ``qwen2_5``: renders no reasoning, so ``reasoning_content`` is removed;
- ``gptoss``: one tool call per assistant message (a turn with several calls is split, each call followed by
  its result), reasoning in ``thinking``, and the text of a tool-calling turn is analysis (``thinking``) —
  gpt-oss does not render it once a final answer follows;
- ``deepseekv3``: renders no reasoning, and only the first tool-calling turn of a conversation keeps its text
  (the template drops the text of later ones), so that text is removed rather than silently lost;
- ``llama3_1`` / ``llama3_2`` (tunepack's): one tool call per assistant message (split as for gpt-oss), no
  reasoning, and no text in a tool-calling message (the stock template drops it), so that text is removed;
- ``gemma4_v5`` (tunepack's): Gemma 4 writes a message's text after the results of its calls, so text said
  before calling is moved into an assistant message of its own just before the calls — the latest revision
  renders consecutive assistant messages as one model turn, text then calls;
- ``gemma4``, ``gemma4_v2``..``v4``: the earlier revisions end the turn after such a message, so the text of a
  tool-calling message is removed (and counted) instead of teaching the model to stop before it calls.

``gemma3`` (raises on tool messages), ``llama3`` and ``phi3`` (drop tool calls) cannot train conversations
with tool calls: ``check_template`` refuses them and names what works — a keeper template of the right
family, or prompt/completion rows (``--rows turn``), where ``flatten_tools`` spells calls and results out
as text (``<tool_call>{"name": …, "arguments": …}</tool_call>`` / ``<tool_response>…</tool_response>``).
"""

from __future__ import annotations

import copy
import json
from collections import Counter

from ..errors import TraceError
from .model import DROPPER_TEMPLATES, KEEPER_TEMPLATES


def normalize_name(template: str | None) -> str | None:
    if not template:
        return None
    name = template.split(":", 1)[1] if template.startswith(("trl:", "tunepack:")) else template
    if name not in KEEPER_TEMPLATES and name not in DROPPER_TEMPLATES:
        known = ", ".join(KEEPER_TEMPLATES + tuple(DROPPER_TEMPLATES))
        raise TraceError(f"The template '{template}' is not one the converter can shape rows for.",
                         f"use one of: {known} (or leave --template out for qwen3-style rows).")
    return name


def has_tools(messages: list[dict]) -> bool:
    return any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


def check_template(name: str | None, rows: str, with_tools: int) -> None:
    """Refuse a template that would lose the tool calls of ``with_tools`` conversations."""
    if name in DROPPER_TEMPLATES and rows == "conversation" and with_tools:
        keepers = ", ".join(KEEPER_TEMPLATES)
        raise TraceError(
            f"The chat template '{name}' {DROPPER_TEMPLATES[name]}, but {with_tools} converted conversations "
            "hold tool calls: as conversation rows the model would never see or learn them.",
            f"convert with --template set to a template that carries tool calls and matches the model family "
            f"({keepers}), or write prompt/completion rows with --rows turn, where tool calls and results are "
            "spelled out as text any template renders.")


def _split_calls(messages: list[dict]) -> list[dict]:
    """gpt-oss and Llama 3.x: one call per assistant message, each followed by its result."""
    out: list[dict] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        calls = m.get("tool_calls") or []
        if m["role"] != "assistant" or len(calls) < 2:
            out.append(m)
            i += 1
            continue
        results: dict[str | None, list[dict]] = {}
        j = i + 1
        while j < len(messages) and messages[j]["role"] == "tool":
            results.setdefault(messages[j].get("tool_call_id"), []).append(messages[j])
            j += 1
        for n, call in enumerate(calls):
            part = {"role": "assistant", "content": m["content"] if n == 0 else "", "tool_calls": [call]}
            if n == 0 and m.get("thinking"):
                part["thinking"] = m["thinking"]
            if "_i" in m:  # the row builder's marker of the original turn
                part["_i"] = m["_i"]
            out.append(part)
            out.extend(results.pop(call.get("id"), []))
        for rest in results.values():
            out.extend(rest)
        i = j
    return out


def _text_before_calls(messages: list[dict], counts: Counter) -> list[dict]:
    """gemma4_v5: the text of a tool-calling message as its own assistant message just before the calls."""
    out: list[dict] = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls") and m["content"]:
            counts["text_before_calls_split"] += 1
            out.append({"role": "assistant", "content": m["content"], **({"_i": m["_i"]} if "_i" in m else {})})
            m = dict(m, content="")
        out.append(m)
    return out


def _drop_text_of_calls(messages: list[dict], counts: Counter) -> None:
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls") and m["content"]:
            counts["text_of_tool_turn_removed"] += 1
            m["content"] = ""


def _drop_reasoning(messages: list[dict], counts: Counter) -> None:
    """Templates that render no reasoning: ``reasoning_content`` removed (and counted)."""
    for m in messages:
        if m.pop("reasoning_content", None):
            counts["reasoning_not_rendered"] += 1


def _drop_text_of_later_calls(messages: list[dict], counts: Counter) -> None:
    """deepseekv3: only the first tool-calling message keeps its text."""
    seen_call = False
    for m in messages:
        if m.get("tool_calls"):
            if seen_call and m["content"]:
                counts["text_of_later_tool_turn_removed"] += 1
                m["content"] = ""
            seen_call = True


def _reasoning_as_thinking(messages: list[dict]) -> None:
    """gpt-oss: reasoning, and the text of a tool-calling message, go in ``thinking``."""
    for m in messages:
        if m["role"] != "assistant":
            continue
        thinking = m.pop("reasoning_content", "")
        if m.get("tool_calls") and m["content"]:
            thinking = f"{thinking}\n\n{m['content']}".strip()
            m["content"] = ""
        if thinking:
            m["thinking"] = thinking


def shape(messages: list[dict], name: str | None, counts: Counter) -> list[dict]:
    """A copy of ``messages`` shaped for template ``name`` (None / qwen3 / droppers: unchanged)."""
    if name in (None, "qwen3") or name in DROPPER_TEMPLATES:
        return messages
    out = copy.deepcopy(messages)
    if name == "gemma4_v5":
        return _text_before_calls(out, counts)
    if name.startswith("gemma4"):
        _drop_text_of_calls(out, counts)
        return out
    if name in ("llama3_1", "llama3_2"):
        _drop_reasoning(out, counts)
        _drop_text_of_calls(out, counts)
        return _split_calls(out)
    if name in ("qwen2_5", "deepseekv3"):
        _drop_reasoning(out, counts)
    if name == "deepseekv3":
        _drop_text_of_later_calls(out, counts)
    if name == "gptoss":
        _reasoning_as_thinking(out)
        out = _split_calls(out)
    return out


def flatten_tools(messages: list[dict]) -> list[dict]:
    """Tool calls and results as plain text (for templates without tool support), roles merged to alternate."""
    out: list[dict] = []
    for m in messages:
        if m["role"] == "tool":
            m = {"role": "user", "content": f"<tool_response>\n{m['content']}\n</tool_response>"}
        elif m["role"] == "assistant":
            text = m.get("content") or ""
            for call in m.get("tool_calls") or []:
                payload = json.dumps({"name": call["function"]["name"], "arguments": call["function"]["arguments"]},
                                     ensure_ascii=False)
                text = f"{text}\n<tool_call>\n{payload}\n</tool_call>" if text else f"<tool_call>\n{payload}\n</tool_call>"
            m = {"role": "assistant", "content": text, **({"_i": m["_i"]} if "_i" in m else {})}
        else:
            m = {"role": m["role"], "content": m["content"]}
        if out and out[-1]["role"] == m["role"] == "user":
            out[-1]["content"] += "\n\n" + m["content"]
        else:
            out.append(m)
    return out
