"""Next action on held-out sessions: does the model call the tool the agent called, as the agent did?

    items, baseline_tool = next_action_items(rows, record, max_turns=200)
    result = run_model(gen, items, family, max_tokens=512, max_length=4096, log=None)

For every model turn of the held-out sessions (consecutive assistant messages are one turn: Gemma 4's shaping
splits the text said before a call from the call, and its template renders them as one model turn) the prompt is
the conversation before that turn, as the template renders it at inference (cut to the run's max_length as
training windows cut a session: the opening kept, the oldest whole turns after it dropped until the rest takes at
most half the room, and that cut kept for the turns after it while they fit), the model writes that turn
greedily, the family parser (toolcalls.py) reads it, and it is scored against the recorded turn:

- action_type: a call (well-formed or not) where the agent called a tool, an answer where it answered (all turns);
- parses: the first call is well-formed, where the agent called a tool;
- tool_name: the first call names the agent's first tool;
- args_valid: that call's arguments are valid against the tool's JSON schema from the session;
- arg_keys / arg_values: the same argument names / the exact values (JSON-equal);
- stop: an answer, no call, where the agent stopped and answered.

Only the first call is scored, so generation stops at its end (or at the model's stop tokens, or max_tokens).
The turns are scored the way an inference engine serves a session (generate.py, turndecode.py): each session's
prompt is read once, every turn reusing the cache of the tokens its prompt shares with the turn before (computed:
Gemma 4's turn k is not always a token prefix of turn k+1), turns of all sessions decoded together in batches
refilled as they stop. ``engine="plain"`` scores each prompt from scratch in padded ``generate`` batches.

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
from .toolcalls import CALL_ENDS, Call, Parsed, family_of, parse

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


def heldout_summary(rows: list[dict], record: dict, names: int = 12) -> dict:
    """What a held-out split holds for next action, before any training: its sessions (the first ``names`` of
    them), rows, model turns, turns with a tool call and the tools those call."""
    from .heldout import group_key, heldout_names

    held = select(rows, record)
    column = record.get("messages_column") or "messages"
    turns = [t for row in held for t in row_turns(row, group_key(row, column))]
    tools = Counter(c.name for t in turns for c in t.reference[:1])
    shown = [min((n for n in heldout_names(g["id"]) if not n.startswith("session:")), key=len, default=g["id"])
             for g in record["groups"]]
    every = sum(len(row_turns(row, group_key(row, column))) for row in rows)
    return {"sessions": len(record["groups"]), "of": record["total_groups"], "names": shown[:names],
            "rows": len(held), "turns": len(turns), "of_turns": every, "call_turns": sum(1 for t in turns if t.reference),
            "tools": dict(tools.most_common()), "seed": record["seed"], "named": bool(record.get("named")),
            "balanced": bool(record.get("balanced"))}


def heldout_summary_line(summary: dict) -> str:
    names = ", ".join(summary["names"]) + (" …" if summary["sessions"] > len(summary["names"]) else "")
    tools = ", ".join(f"{name} {n}" for name, n in list(summary["tools"].items())[:6]) or "none"
    how = "named in data.eval_sessions" if summary["named"] else f"drawn with data.eval_seed {summary['seed']}" + (
        ", sessions taken while the held-out turns stay within data.eval_fraction (a plain draw of sessions took "
        "most of the turns)" if summary.get("balanced") else "")
    of = f" of {summary['of_turns']}" if summary.get("of_turns") else ""
    return (f"held out {summary['sessions']} of {summary['of']} sessions ({how}: {names}): {summary['turns']}{of} "
            f"model turns, {summary['call_turns']} with a tool call; first calls by tool: {tools}")


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


def session_contexts(turns: list[Turn], count, room: int | None) -> list[list[dict]]:
    """The contexts of one session's turns (in order) that fit in ``room`` tokens (``count(context, tools)``), cut
    as training windows cut a session, and kept stable so consecutive turns share their beginning: while a turn's
    context fits from the last cut on, it starts there; when it no longer fits, the oldest whole turns are dropped
    until what follows the opening takes at most half the room (training's window_context), and that is the new
    cut. Cutting the fewest turns at every turn would move the start each time, and no turn could reuse the cache
    of the one before."""
    out: list[list[dict]] = []
    start: int | None = None
    for turn in turns:
        context = turn.context
        head = next((i + 1 for i, m in enumerate(context) if m.get("role") == "user"), min(1, len(context)))
        if room is None:
            out.append(context)
            continue
        since = start if start is not None and head <= start <= len(context) else head  # the last cut, if any
        if count(context[:head] + context[since:], turn.tools) <= room:
            start = since
            out.append(context[:head] + context[since:])
            continue
        opening = count(context[:head], turn.tools)
        budget = opening + max(0, room - opening) // 2
        # the new cut lies after the last one (a context only grows): bisect over what follows it
        kept = fit_context(context[:head] + context[since:], lambda c, t=turn.tools, b=budget: count(c, t) <= b)
        start = len(context) - (len(kept) - head)
        out.append(kept)
    return out


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
              batch_size: int = 16, engine: str = "fast", on_turn=None) -> dict:
    """The metrics of one loaded model on the turns, each sample written to ``log`` (jsonl) when given."""
    def count(context: list[dict], tools) -> int:
        return len(gen.tokenizer(gen.prompt(context, tools), add_special_tokens=False)["input_ids"])

    started, judged, samples = time.monotonic(), [], []
    sessions: list[list[int]] = []  # indices of the turns, grouped by session in their order
    for i, turn in enumerate(turns):
        if sessions and turns[sessions[-1][-1]].session == turn.session:
            sessions[-1].append(i)
        else:
            sessions.append([i])
    contexts: list[list[dict]] = [[] for _ in turns]
    room = max_length - max_tokens if max_length else None
    for group in sessions:
        for i, context in zip(group, session_contexts([turns[i] for i in group], count, room), strict=True):
            contexts[i] = context
    prepared = time.monotonic()
    answers = gen.complete_sessions([[(contexts[i], turns[i].tools) for i in group] for group in sessions],
                                    max_tokens, batch_size, stop_tokens=CALL_ENDS[family], engine=engine,
                                    on_turn=on_turn)
    texts: list[str] = [""] * len(turns)
    for group, outs in zip(sessions, answers, strict=True):
        for i, text in zip(group, outs, strict=True):
            texts[i] = text
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
    decoder = getattr(gen, "decoder", None)
    return {"metrics": tally(judged), "seconds": round(seconds, 2), "outputs": texts,
            "seconds_per_100_turns": round(100 * seconds / len(turns), 2) if turns else None,
            "engine": "vllm" if gen.backend == "vllm" else engine, "context_seconds": round(prepared - started, 2),
            "decode": dict(decoder.stats) if decoder is not None and engine == "fast" else None,
            "contexts": contexts}


def family_for(gen) -> str:
    family = family_of(gen.template or "")
    if family is None:
        raise KitError(f"The chat template of {gen.model['label']} writes tool calls in a syntax tunepack does not "
                       "parse, so next-action cannot be scored.",
                       "evaluate a Qwen/Hermes (<tool_call> JSON), Llama 3.x or Gemma 4 model, or drop next-action "
                       "from eval.tasks.")
    return family
