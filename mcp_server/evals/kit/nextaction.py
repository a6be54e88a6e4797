"""Next action on held-out sessions: does the model call the tool the agent called, as the agent did?

    items, baseline_tool = next_action_items(rows, record, max_turns=200)
    row = score_next_action(generators, items, baseline_tool, family_for, settings)

For every model turn of the held-out sessions (consecutive assistant messages are one turn: Gemma 4's shaping
splits the text said before a call from the call, and its template renders them as one model turn) the prompt
is the conversation before that turn
(cut to the run's max_length as training windows are: the opening kept, the oldest turns after it
dropped), the model writes one message greedily, the family parser (toolcalls.py) reads it, and it
is scored against the recorded turn:

- action_type: a call (well-formed or not) where the agent called a tool, an answer where it answered (all turns);
- parses: a well-formed call where the agent called a tool;
- tool_name: the first call names the agent's tool;
- args_valid: that call's arguments are valid against the tool's JSON schema from the session;
- arg_keys / arg_values: the same argument names / the exact values (JSON-equal);
- stop: an answer, no call, where the agent stopped and answered.

Call metrics count over the turns where the agent called a tool, so a missing call is a miss. Every
metric comes with n and a Wilson 95 % interval, beside the most-frequent-tool baseline (always call
the tool the training sessions call most, with no arguments), scored by the same rules.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .errors import KitError
from .heldout import HeldoutError, select
from .intervals import rate
from .shaping import model_turns
from .toolcalls import Call, Parsed, family_of, parse

METRICS = ("action_type", "parses", "tool_name", "args_valid", "arg_keys", "arg_values", "stop")
HEADLINE = "tool_name"
TASK = "next-action"


@dataclass
class Turn:
    session: str
    index: int
    context: list[dict]
    tools: list[dict]
    reference: list[Call]
    answer: str = ""
    meta: dict = field(default_factory=dict)


def _json(value):
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def reference_calls(message: dict) -> list[Call]:
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or call
        args = _json(fn.get("arguments"))
        calls.append(Call(str(fn.get("name")), args if isinstance(args, dict) else {}))
    return calls


def _clean(message: dict) -> dict:
    """A message as the template gets it: no None fields (rows read through Arrow carry them)."""
    out = {k: v for k, v in message.items() if v is not None}
    if out.get("tool_calls"):
        out["tool_calls"] = [{**c, "function": {**c["function"], "arguments": _json(c["function"].get("arguments"))}}
                             for c in out["tool_calls"]]
    return out


def row_turns(row: dict, session: str) -> list[Turn]:
    """The model turns of one row (a conversation, or a prompt/completion row's completion) as next-action turns."""
    tools = _json(row.get("tools")) or []
    if isinstance(row.get("completion"), list) and isinstance(row.get("prompt"), list):
        messages, starts = [*row["prompt"], *row["completion"]], len(row["prompt"])
    else:
        messages, starts = row.get("messages") or [], 0
    messages = [_clean(m) for m in messages]
    return [Turn(session, j, messages[:j], tools, [c for m in messages[j:end] for c in reference_calls(m)],
                 "\n\n".join(str(m.get("content") or "") for m in messages[j:end] if m.get("content")))
            for j, end in model_turns(messages) if j >= starts and j > 0]


def next_action_items(rows: list[dict], record: dict, max_turns: int | None = None) -> tuple[list[Turn], str | None]:
    """(the held-out turns, the most frequent tool of the training rows) from the run's training rows."""
    from .heldout import group_key

    try:
        held = select(rows, record)
    except HeldoutError as exc:
        raise KitError(exc.problem, exc.fix) from exc
    held_ids = {id(r) for r in held}
    counts: Counter = Counter()
    for row in rows:
        if id(row) not in held_ids:
            for turn in row_turns(row, ""):
                counts.update(c.name for c in turn.reference[:1])
    turns = [t for row in held for t in row_turns(row, group_key(row, record.get("messages_column") or "messages"))]
    return turns[:max_turns] if max_turns else turns, (counts.most_common(1)[0][0] if counts else None)


def fit_context(context: list[dict], fits) -> list[dict]:
    """The opening (through the first user message) and as many of the latest messages as ``fits`` allows, dropped
    a whole model turn at a time: a kept tail never starts with a tool result whose call was dropped, nor with
    the call piece of a turn whose text piece was dropped. The cut is found by bisection over those boundaries
    (a shorter tail never renders longer), so a long session costs a few renders, not one per turn."""
    head = next((i + 1 for i, m in enumerate(context) if m.get("role") == "user"), min(1, len(context)))
    tail = context[head:]
    cuts = [0]  # where a kept tail may start: after a whole model turn (and its results) or another message
    for i in range(1, len(tail) + 1):
        if i == len(tail) or not (tail[i].get("role") == "tool" or tail[i].get("role") == "assistant" == tail[i - 1].get("role")):
            cuts.append(i)
    if fits(context[:head] + tail):
        return context
    low, high = 0, len(cuts) - 1  # cuts[high] (the empty tail) is taken when nothing else fits
    while high - low > 1:
        middle = (low + high) // 2
        if fits(context[:head] + tail[cuts[middle]:]):
            high = middle
        else:
            low = middle
    return context[:head] + tail[cuts[high]:]


def _schema_ok(arguments: dict, tools: list[dict], name: str) -> bool:
    import jsonschema

    tool = next((t.get("function", t) for t in tools if t.get("function", t).get("name") == name), None)
    if tool is None:
        return False
    try:
        jsonschema.validate(arguments, tool.get("parameters") or {"type": "object"})
    except jsonschema.ValidationError:
        return False
    except jsonschema.SchemaError:
        return isinstance(arguments, dict)
    return True


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def judge_turn(turn: Turn, pred: Parsed) -> dict[str, bool | None]:
    """Each metric's hit for one turn; None where the metric does not count this turn."""
    calls, first = turn.reference, (pred.calls[0] if pred.calls else None)
    called = bool(pred.calls) or not pred.well_formed  # a broken call is still a call, not an answer
    hits: dict[str, bool | None] = {"action_type": called == bool(calls)}
    if not calls:
        return {**hits, **{m: None for m in METRICS[1:-1]}, "stop": not called}
    if first is None:
        return {**hits, **{m: False for m in METRICS[1:-1]}, "stop": None}
    ref = calls[0]
    named = first.name == ref.name
    return {**hits, "parses": pred.well_formed, "tool_name": named,
            "args_valid": _schema_ok(first.arguments, turn.tools, first.name),
            "arg_keys": named and set(first.arguments) == set(ref.arguments),
            "arg_values": named and _same(first.arguments, ref.arguments), "stop": None}


def tally(judged: list[dict]) -> dict[str, dict]:
    out = {}
    for metric in METRICS:
        counted = [j[metric] for j in judged if j[metric] is not None]
        out[metric] = rate(sum(bool(h) for h in counted), len(counted))
    return out


def baseline(turns: list[Turn], tool: str | None) -> dict:
    pred = Parsed("", [Call(tool, {})] if tool else [])
    return {"tool": tool, "metrics": tally([judge_turn(t, pred) for t in turns])}


def run_model(gen, turns: list[Turn], family: str, max_tokens: int, max_length: int | None, log: Path | None,
              batch_size: int = 16) -> dict:
    """The metrics of one loaded model on the turns, each sample written to ``log`` (jsonl) when given."""
    def fits(context: list[dict], tools) -> bool:
        return not max_length or len(gen.tokenizer(gen.prompt(context, tools), add_special_tokens=False)
                                     ["input_ids"]) + max_tokens <= max_length

    started, judged, samples = time.monotonic(), [], []
    contexts = [fit_context(turn.context, lambda c, t=turn.tools: fits(c, t)) for turn in turns]
    texts = gen.complete([(c, t.tools) for c, t in zip(contexts, turns, strict=True)], max_tokens, batch_size)
    for turn, context, text in zip(turns, contexts, texts, strict=True):
        pred = parse(family, text)
        hits = judge_turn(turn, pred)
        judged.append(hits)
        samples.append({"session": turn.session, "turn": turn.index, "context_messages": len(context),
                        "output": text[-2000:], "calls": [c.__dict__ for c in pred.calls], "error": pred.error,
                        "reference": [c.__dict__ for c in turn.reference], "hits": hits})
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(json.dumps(s, default=str) + "\n" for s in samples), encoding="utf-8")
    seconds = time.monotonic() - started
    return {"metrics": tally(judged), "seconds": round(seconds, 2),
            "seconds_per_100_turns": round(100 * seconds / len(turns), 2) if turns else None}


def family_for(gen) -> str:
    family = family_of(gen.template or "")
    if family is None:
        raise KitError(f"The chat template of {gen.model['label']} writes tool calls in a syntax tunepack does not "
                       "parse, so next-action cannot be scored.",
                       "evaluate a Qwen/Hermes (<tool_call> JSON), Llama 3.x or Gemma 4 model, or drop next-action "
                       "from eval.tasks.")
    return family
