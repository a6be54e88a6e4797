"""The tool-use tasks of one eval run: next-action on held-out sessions, BFCL and mbpp-agent (MBPP solved in the
coding environment), each model loaded once.

    rows = run_tool_tasks(spec, tasks, progress)   # tasks: ["next-action", "bfcl:simple_python", "mbpp-agent"]

Each model ({"label", "base"[, "adapter"]}) is checked against what its run recorded (integrity.py),
loaded once (generate.py) and given every tool task; results come back as the runner's task rows,
with each metric's n and 95 % interval under ``metrics`` and the baseline beside them.
"""

from __future__ import annotations

from pathlib import Path

from . import agent_task
from .errors import KitError
from .generate import describe, load_generator
from .integrity import check_model
from .intervals import rate
from .nextaction import HEADLINE, TASK, baseline, family_for, next_action_items, run_model
from .progress import Meter

BFCL_PREFIX = "bfcl:"
AGENT = agent_task.TASK


def is_tool_task(task: str) -> bool:
    return task == TASK or task.startswith(BFCL_PREFIX) or task == AGENT


def agent_rows(spec: dict) -> list[dict]:
    """mbpp-agent's rows: MBPP's test split (eval.limit / eval.ids apply), one visible test each."""
    from .problems import load_problems

    rows = agent_task.agent_rows(load_problems("mbpp", spec.get("mbpp_source"), spec.get("limit"), spec.get("ids")))
    if not rows:
        raise KitError(f"No MBPP test problem is selected for {AGENT} (ids {spec.get('ids')}).",
                       "check eval.ids against MBPP's test split (mbpp/11 to mbpp/510).")
    return rows


def _agent_box(spec: dict, progress):
    """The sandbox the episodes' programs run in (tunepack's own: Inspect's docker sandbox cannot hold a session)."""
    from .sandbox import Limits, Sandbox

    mode = spec.get("sandbox", "namespaces")
    if mode == "docker":
        raise KitError(f"{AGENT} runs its sessions in tunepack's sandbox, not Inspect's docker sandbox.",
                       "set eval.sandbox to auto (namespaces where they work, else confined), or drop mbpp-agent.")
    limits = Limits(timeout_s=float(spec.get("timeout_s", 10)), memory_mb=int(spec.get("memory_mb", 512)))
    box = Sandbox(mode, workers=2, limits=limits).start()
    progress(f"[tunepack] {AGENT}: sandbox {box.mode}" + ("" if box.isolated else " - NOT ISOLATED"))
    return box


def _training_rows(paths: list[str]) -> list[dict]:
    from .contamination import iter_training_rows

    return list(iter_training_rows(paths))


def _next_action_turns(spec: dict, progress):
    na = spec.get("next_action") or {}
    if not na.get("heldout"):
        raise KitError("next-action needs the sessions the run held out, and this run held out none "
                       "(data.eval_fraction was not set).",
                       "set data.eval_fraction (e.g. 0.1) and train again, or drop next-action from eval.tasks.")
    rows = _training_rows(na.get("train_data") or spec.get("train_data") or [])
    rows = _shaped(rows, na.get("shaping"), na["heldout"].get("messages_column") or "messages")
    turns, tool = next_action_items(rows, na["heldout"])
    if spec.get("limit"):  # a smoke: the first N held-out sessions, every turn of each
        keep = list(dict.fromkeys(t.session for t in turns))[:int(spec["limit"])]
        turns = [t for t in turns if t.session in set(keep)]
    if not turns:
        raise KitError("The held-out sessions hold no assistant turn to score.",
                       "hold out more sessions (a larger data.eval_fraction).")
    sessions = len({t.session for t in turns})
    progress(f"[tunepack] next-action: {len(turns)} held-out turns from {sessions} of {len(na['heldout']['groups'])} "
             f"held-out sessions; most frequent training tool: {tool}")
    return turns, tool


def _shaped(rows: list[dict], template: str | None, column: str) -> list[dict]:
    """Plain chat rows shaped for the template the run trained with, as the training script shaped them."""
    if not template:
        return rows
    from .shaping import ShapingError, shape_rows

    try:
        return shape_rows(rows, template, column)[0]
    except ShapingError as exc:
        raise KitError(exc.problem, exc.fix) from exc


def _bfcl_items(spec: dict, task: str) -> list:
    from . import bfcl

    return bfcl.load(task[len(BFCL_PREFIX):], limit=spec.get("limit"), ids=None, source=spec.get("bfcl_source"))


def _bfcl_score(gen, family: str, items: list, max_tokens: int, log: Path | None, meter=None) -> dict:
    import json

    from . import bfcl
    from .toolcalls import parse

    hits, samples = 0, []
    prompts = [(p["conversation"], p["tools"]) for p in map(bfcl.prompt_messages, items)]
    for item, text in zip(items, gen.complete(prompts, max_tokens, on_turn=meter), strict=True):
        verdict = bfcl.check(item, parse(family, text).calls)
        hits += bool(verdict.correct)
        samples.append({"id": item.id, "output": text[-2000:], "correct": verdict.correct, "reason": verdict.reason})
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    return {"accuracy": rate(hits, len(items))}


def _agent_result(gen, family: str, spec: dict, box, rows: list[dict], label: str, logs: Path | None) -> dict:
    folder = logs / f"{AGENT}-{label}" if logs else None
    return agent_task.run_agent_model(gen, rows, family, {"box": box, "timeout_s": float(spec.get("timeout_s", 10)),
                                                          "max_tokens": int(spec.get("max_tokens", 512)),
                                                          "label": label}, folder)


def _row(task: str, metric: str, n: int) -> dict:
    return {"task": task, "metric": metric, "n": n, "samples": 1, "scores": {}, "stderr": {}, "status": {},
            "logs": {}, "metrics": {}, "contamination": None}


def run_tool_tasks(spec: dict, tasks: list[str], progress, contamination: dict | None = None,
                   finished=None) -> tuple[dict, dict]:
    """({task: row}, {label: what was loaded}) for the tool tasks of the spec; ``finished(rows)`` after each task
    of each model (the results so far)."""
    turns, tool = _next_action_turns(spec, progress) if TASK in tasks else ([], None)
    items = {t: _bfcl_items(spec, t) for t in tasks if t.startswith(BFCL_PREFIX)}
    problems = agent_rows(spec) if AGENT in tasks else []
    sizes = {TASK: len(turns), AGENT: len(problems), **{t: len(v) for t, v in items.items()}}
    rows = {t: _row(t, {TASK: HEADLINE, AGENT: agent_task.HEADLINE}.get(t, "accuracy"), sizes[t]) for t in tasks}
    if TASK in rows:
        rows[TASK]["baseline"] = baseline(turns, tool)
        rows[TASK]["heldout"] = {"groups": len(spec["next_action"]["heldout"]["groups"]), "turns": len(turns)}
    box = _agent_box(spec, progress) if problems else None
    if box is not None:
        rows[AGENT]["sandbox"] = box.mode
    try:
        loaded = _score_models(spec, tasks, rows, {"turns": turns, "items": items, "agent": problems, "box": box},
                               progress, contamination, finished)
    finally:
        if box is not None:
            box.close()
    return rows, loaded


def _score_models(spec: dict, tasks: list[str], rows: dict, inputs: dict, progress, contamination: dict | None,
                  finished=None) -> dict:
    """Each model loaded once and given every tool task; {label: what was loaded}."""
    loaded, max_tokens = {}, int(spec.get("max_tokens", 512))
    turns, items = inputs["turns"], inputs["items"]
    logs = Path(spec["log_dir"]) if spec.get("log_dir") else None
    for model in spec["models"]:
        label = model["label"]
        check_model(model, spec.get("expected"))
        gen = load_generator(model, spec.get("backend", "auto"))
        family = family_for(gen)
        loaded[label] = {**describe(gen), "parser": family}
        progress(f"[tunepack] evaluating {label} ({gen.backend}, {family} tool calls) on {', '.join(tasks)}")
        for task, row in rows.items():
            dirty = bool(model.get("adapter")) and bool(((contamination or {}).get(task) or {}).get("contaminated"))
            if dirty and not spec.get("allow_contaminated"):
                row["scores"][label], row["status"][label] = None, "withheld"
                continue
            log = logs / f"{task.replace(':', '-')}-{label}.jsonl" if logs else None
            meter = Meter(task, label, row["n"])
            if task == TASK:
                result = run_model(gen, turns, family, max_tokens, (spec.get("next_action") or {}).get("max_length"),
                                   log, on_turn=meter)
                row["seconds_per_100_turns"] = {**row.get("seconds_per_100_turns", {}),
                                                label: result["seconds_per_100_turns"]}
                row["decode"] = {**row.get("decode", {}), label: {"engine": result["engine"], **(result["decode"] or {})}}
            elif task == AGENT:
                result = _agent_result(gen, family, spec, inputs["box"], inputs["agent"], label, logs)
                log = logs / f"{AGENT}-{label}" if logs else None
            else:
                result = {"metrics": _bfcl_score(gen, family, items[task], max_tokens, log, meter)}
            meter(row["n"])
            row["metrics"][label] = result["metrics"]
            row["scores"][label] = result["metrics"][row["metric"]]["score"]
            row["status"][label] = "contaminated" if dirty else "scored"
            row["logs"][label] = str(log) if log else None
            if finished is not None:
                finished(rows)
        del gen
    return loaded


def bfcl_problems(spec: dict, task: str) -> list:
    """The BFCL items of a task as Problems (the user's question as the text) for the contamination check."""
    from .problems import Problem

    out = []
    for item in _bfcl_items(spec, task):
        text = "\n".join(str(m.get("content") or "") for m in bfcl_messages(item) if m.get("role") == "user")
        out.append(Problem(id=item.id, benchmark=task, text=text, tests=""))
    return out


def bfcl_messages(item) -> list[dict]:
    from . import bfcl

    return bfcl.prompt_messages(item)["conversation"]
