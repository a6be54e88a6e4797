"""Shape chat rows for the training chat template they are rendered with, whatever their source.

Each training template that carries tool calls has its own rules, and a row that breaks them is rendered with
part of an assistant message missing or moved:

- ``qwen3``: reasoning goes in ``reasoning_content`` and is rendered inside ``<think>``; rows stay as they are;
- ``qwen2_5``: renders no reasoning, so ``reasoning_content`` is removed;
- ``gptoss``: one tool call per assistant message (a message with several calls is split, each call followed by
  its result), reasoning in ``thinking``, and the text of a tool-calling message is analysis (``thinking``) —
  gpt-oss does not render it once a final answer follows;
- ``deepseekv3``: renders no reasoning, and only the first tool-calling message of a conversation keeps its
  text (the template drops the text of later ones), so that text is removed rather than silently lost;
- ``llama3_1`` / ``llama3_2`` (tunepack's): one tool call per assistant message (split as for gpt-oss), no
  reasoning, and no text in a tool-calling message (the template drops it), so that text is removed;
- ``gemma4_v5`` (tunepack's): Gemma 4 writes a message's text after the results of its calls, so text said
  before calling moves into an assistant message of its own just before the calls, with the message's reasoning
  — this revision renders consecutive assistant messages as one model turn: thought, text, then calls;
- ``gemma4``, ``gemma4_v2``..``v4``: the earlier revisions end the turn after such a message, so the text of a
  tool-calling message is removed (and counted) instead of teaching the model to stop before it calls.

``gemma3`` (raises on tool messages), ``llama3`` and ``phi3`` (drop tool calls) cannot carry tool calls at all;
``flatten_tool_messages`` spells calls and results out as text for them (prompt/completion rows).

    rows, counts = shape_rows(rows, "llama3_2")   # counts: {"rows_shaped": 2, "text_of_tool_turn_removed": 2}
    log(shaping_line("llama3_2", counts))

Standard library only, and every name is its own: the training script embeds this file verbatim beside the mask
check (plain ``messages`` rows are shaped there for the template it trains with, before the held-out split), the
eval kit carries it (next-action re-reads held-out rows and shapes them the same way, so the reference is what the
model could produce), and tunepack's converter uses it through ``mcp_server/traces/templates.py``. Shaping twice
changes nothing. Errors are ``ShapingError`` (a ValueError with ``problem`` and ``fix``).
"""

from __future__ import annotations

import copy
import json
from collections import Counter

KEEPER_TEMPLATES = ("qwen3", "qwen2_5", "gptoss", "deepseekv3",  # TRL's training templates
                    "gemma4", "gemma4_v2", "gemma4_v3", "gemma4_v4", "gemma4_v5", "llama3_1", "llama3_2")  # tunepack's
DROPPER_TEMPLATES = {
    "gemma3": "raises an error on tool messages",
    "llama3": "silently drops assistant tool calls",
    "phi3": "silently drops assistant tool calls and tool results",
}
# What each template needs, in the words of the log line.
SHAPING_RULES = {
    "qwen2_5": "no reasoning rendered",
    "gptoss": "one tool call per message, reasoning and the text beside a call as thinking",
    "deepseekv3": "no reasoning rendered, text beside a call kept in the first calling message only",
    "llama3_1": "one tool call per message, no text beside a call, no reasoning rendered",
    "llama3_2": "one tool call per message, no text beside a call, no reasoning rendered",
    "gemma4_v5": "text said before calling as a message of its own before the calls",
    **{n: "no text beside a call (the turn would end before the call)" for n in ("gemma4", "gemma4_v2", "gemma4_v3",
                                                                              "gemma4_v4")},
}


class ShapingError(ValueError):
    """Rows cannot be shaped faithfully for a template, or the template is not one whose rules are known."""

    def __init__(self, problem: str, fix: str):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem} Fix: {fix}")


def shaping_name(template: str | None) -> str | None:
    """``trl:llama3_2``, ``tunepack:llama3_2`` or ``llama3_2`` → ``llama3_2``; None or "" → None (rows as they are)."""
    if not template:
        return None
    name = template.split(":", 1)[1] if template.startswith(("trl:", "tunepack:")) else template
    if name not in KEEPER_TEMPLATES and name not in DROPPER_TEMPLATES:
        raise ShapingError(f"The template '{template}' is not one whose row shaping is known.",
                           f"name one of: {', '.join(KEEPER_TEMPLATES + tuple(DROPPER_TEMPLATES))}, or none for rows "
                           "as they are.")
    return name


def shaping_name_of(template: str, packaged: dict[str, str], trl: dict[str, str]) -> str | None:
    """The shaping rules of a training template's text: a tunepack template (``packaged``, {name: text}) by its name,
    a TRL training variant (``trl``, {file stem: text}) by its stem less ``_training``; None for any other text."""
    for name, text in packaged.items():
        if text == template and name in KEEPER_TEMPLATES:
            return name
    for stem, text in trl.items():
        name = stem[:-len("_training")]
        if stem.endswith("_training") and text == template and name in KEEPER_TEMPLATES:
            return name
    return None


# --- what a conversation holds ---------------------------------------------------------------------

def shaping_messages(value: object) -> list | None:
    """A row's conversation: the list itself, or the list a JSON string holds; None for anything else."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, list) else None


def shaping_features(value: object) -> set[str]:
    """What of a conversation some template renders differently: ``text_with_calls`` (an assistant message with
    text and tool calls), ``several_calls`` (more than one call in a message), ``reasoning``."""
    found: set[str] = set()
    for m in shaping_messages(value) or []:
        if not isinstance(m, dict) or m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls") or []
        if calls and m.get("content"):
            found.add("text_with_calls")
        if len(calls) > 1:
            found.add("several_calls")
        if m.get("reasoning_content"):
            found.add("reasoning")
    return found


def model_turns(messages: list) -> list[tuple[int, int]]:
    """(start, end) of each model turn: a run of consecutive assistant messages (text piece and call piece of one
    turn, as a template that joins them renders it). Tool results and other roles are not part of it."""
    turns: list[tuple[int, int]] = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        if turns and turns[-1][1] == index:
            turns[-1] = (turns[-1][0], index + 1)
        else:
            turns.append((index, index + 1))
    return turns


# --- the rules ---------------------------------------------------------------------------------------

def _results_per_call(calls: list[dict], results: list[dict]) -> list[list[dict]]:
    """The tool results answering each call: by id where every call has an id of its own, else one per call in
    order; ShapingError where neither tells which result answers which call."""
    ids = [call.get("id") for call in calls]
    if all(ids) and len(set(ids)) == len(ids) and all(r.get("tool_call_id") in ids for r in results):
        by_id: dict = {i: [] for i in ids}
        for result in results:
            by_id[result["tool_call_id"]].append(result)
        return [by_id[i] for i in ids]
    if len(results) == len(calls):
        return [[result] for result in results]
    raise ShapingError(
        f"An assistant message makes {len(calls)} tool calls and {len(results)} tool results follow it, without ids "
        "that say which result answers which call, but the template renders one call per message, each followed "
        "by its own result.",
        "give each tool call an id and its result the same tool_call_id (or one result per call, in the calls' "
        "order), or drop such rows.")


def _one_call_per_message(messages: list[dict], counts: Counter) -> list[dict]:
    """gpt-oss and Llama 3.x: one call per assistant message, each followed by its result."""
    out: list[dict] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        calls = m.get("tool_calls") or []
        if m.get("role") != "assistant" or len(calls) < 2:
            out.append(m)
            i += 1
            continue
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            j += 1
        counts["tool_calls_split"] += 1
        for n, (call, answers) in enumerate(zip(calls, _results_per_call(calls, messages[i + 1:j]), strict=True)):
            part = {"role": "assistant", "content": (m.get("content") or "") if n == 0 else "", "tool_calls": [call]}
            if n == 0 and m.get("thinking"):
                part["thinking"] = m["thinking"]
            if "_i" in m:  # the row builder's marker of the original turn
                part["_i"] = m["_i"]
            out.append(part)
            out.extend(answers)
        i = j
    return out


def _text_before_calls(messages: list[dict], counts: Counter) -> list[dict]:
    """gemma4_v5: the text of a tool-calling message as its own assistant message just before the calls. Its
    reasoning goes with the text, so the turn renders as the model writes it: thought, text, then the calls."""
    out: list[dict] = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls") and m.get("content"):
            counts["text_before_calls_split"] += 1
            thought = {k: m[k] for k in ("reasoning_content", "reasoning") if m.get(k)}
            out.append({"role": "assistant", "content": m["content"], **thought,
                        **({"_i": m["_i"]} if "_i" in m else {})})
            m = {k: v for k, v in m.items() if k not in thought}
            m["content"] = ""
        out.append(m)
    return out


def _drop_text_of_calls(messages: list[dict], counts: Counter) -> None:
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls") and m.get("content"):
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
            if seen_call and m.get("content"):
                counts["text_of_later_tool_turn_removed"] += 1
                m["content"] = ""
            seen_call = True


def _reasoning_as_thinking(messages: list[dict], counts: Counter) -> None:
    """gpt-oss: reasoning, and the text of a tool-calling message, go in ``thinking``."""
    for m in messages:
        if m.get("role") != "assistant":
            continue
        thinking = m.pop("reasoning_content", None) or ""
        if m.get("tool_calls") and m.get("content"):
            thinking = f"{thinking}\n\n{m['content']}".strip()
            m["content"] = ""
        if thinking:
            counts["reasoning_as_thinking"] += 1
            m["thinking"] = thinking


def shape_messages(messages: list[dict], name: str | None, counts: Counter) -> list[dict]:
    """A copy of ``messages`` shaped for template ``name`` (None / qwen3 / droppers: the list itself, unchanged);
    what changed is added to ``counts`` (messages per kind)."""
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
        return _one_call_per_message(out, counts)
    if name in ("qwen2_5", "deepseekv3"):
        _drop_reasoning(out, counts)
    if name == "deepseekv3":
        _drop_text_of_later_calls(out, counts)
    if name == "gptoss":
        _reasoning_as_thinking(out, counts)
        out = _one_call_per_message(out, counts)
    return out


def shape_rows(rows, template: str | None, messages_column: str = "messages") -> tuple[list[dict], dict[str, int]]:
    """(rows, counts): each row whose ``messages_column`` conversation (a list, or a JSON string of one) some rule
    changes, copied and shaped for ``template`` (``llama3_2``, ``tunepack:gemma4_v5``, ``trl:qwen3`` …; None: rows
    as they are); every other row is returned as it is. ``counts``: ``rows_shaped`` and the messages changed per
    kind. ShapingError (naming the row) where a row cannot be shaped faithfully."""
    name = shaping_name(template)
    out: list[dict] = []
    counts: Counter = Counter()
    for index, row in enumerate(rows):
        value = row.get(messages_column) if isinstance(row, dict) else None
        if not shaping_features(value):
            out.append(row)
            continue
        changed: Counter = Counter()
        try:
            shaped: object = shape_messages(shaping_messages(value) or [], name, changed)
        except ShapingError as exc:
            raise ShapingError(f"Row {index}: {exc.problem}", exc.fix) from None
        if not changed:
            out.append(row)
            continue
        counts["rows_shaped"] += 1
        counts.update(changed)
        text = isinstance(value, str)  # a JSON string stays one
        out.append({**row, messages_column: json.dumps(shaped, ensure_ascii=False) if text else shaped})
    return out, {"rows_shaped": counts.pop("rows_shaped", 0), **dict(sorted(counts.items()))}


def shaping_line(template: str, counts: dict[str, int]) -> str:
    """``shaped 24 rows for llama3_2 (one tool call per message, …): text_of_tool_turn_removed 24``."""
    rule = SHAPING_RULES.get(template)
    kinds = ", ".join(f"{kind} {n}" for kind, n in counts.items() if kind != "rows_shaped" and n)
    return f"shaped {counts.get('rows_shaped', 0)} rows for {template}" + (f" ({rule})" if rule else "") + f": {kinds}"


def flatten_tool_messages(messages: list[dict]) -> list[dict]:
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
