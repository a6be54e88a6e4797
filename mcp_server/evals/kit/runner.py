"""One evaluation run: contamination check, base and adapter through Inspect, one results dict.

    results = run_eval(spec)      # spec: see SPEC_KEYS; returns the dict written to results.json

Models are given as {"label", "base", "adapter"} and resolved at run time: ``vllm/<base>:<adapter>``
when CUDA and vLLM are present (backend auto|vllm), else the ``hf/`` provider loading the
adapter folder (transformers reads its base from adapter_config.json) on CUDA or CPU. The adapter's
score on a task is withheld when the training data overlaps that task's problems, unless
``allow_contaminated`` is set; the result is then labelled contaminated.
"""

from __future__ import annotations

import os
import time

from .contamination import check_contamination, iter_training_texts
from .errors import KitError
from .generate import check_folders, cuda_available, use_vllm
from .integrity import check_model
from .offline import ensure_token_counting
from .problems import load_problems, task_name
from .progress import Meter
from .sandbox import MODES, SAFE_MODES, Limits, Sandbox
from .tasks import DOCKER, code_task
from .toolruns import BFCL_PREFIX, is_tool_task, run_tool_tasks

SPEC_KEYS = (
    "tasks", "limit", "samples", "temperature", "max_tokens", "sandbox", "timeout_s", "memory_mb",
    "mbpp_source", "models", "train_data", "allow_contaminated", "ngram", "min_overlap", "log_dir", "backend",
    "ids", "next_action", "bfcl_source", "expected",
)


def resolve_model(model: dict, backend: str, temperature: float) -> tuple[str, dict]:
    """(inspect model name, model_args) for {"label", "base", "adapter"}."""
    base, adapter = model["base"], model.get("adapter")
    check_folders(model)
    if use_vllm(backend):
        return f"vllm/{base}" + (f":{adapter}" if adapter else ""), {}
    args = {"model_path": adapter or base, "device": "cuda:0" if cuda_available() else "cpu"}
    if temperature <= 0:
        args["do_sample"] = False
    # the model name is the path too: inspect may build the model twice and the second time
    # model_path is gone from model_args (collected on first use), so from_pretrained gets the name
    return f"hf/{adapter or base}", args


def _task_results(log) -> dict:
    if log.status != "success" or not log.results:
        err = getattr(log, "error", None)
        raise KitError(
            f"Inspect could not finish task '{log.eval.task}' ({log.status}): {str(getattr(err, 'message', err))[:400]}",
            "read the Inspect log named in the results; fix the model path/arguments and run the eval again.",
        )
    metrics = log.results.scores[0].metrics
    return {
        "score": metrics["accuracy"].value, "stderr": metrics["stderr"].value if "stderr" in metrics else None,
        "log": log.location, "samples": log.results.completed_samples,
    }


def _check_spec(spec: dict) -> str:
    """The sandbox mode, after refusing unknown keys and modes."""
    unknown = set(spec) - set(SPEC_KEYS)
    if unknown:
        raise KitError(f"Unknown eval spec keys: {sorted(unknown)}.", f"use only: {', '.join(SPEC_KEYS)}.")
    mode = spec.get("sandbox", "namespaces")
    if mode not in (*MODES, DOCKER):
        raise KitError(f"Unknown sandbox '{mode}'.", f"use one of: {', '.join((*MODES, DOCKER))}.")
    return mode


def _problems(spec: dict) -> dict[str, list]:
    problems = {
        task_name(t): load_problems(t, spec.get("mbpp_source"), spec.get("limit"), spec.get("ids"))
        for t in spec["tasks"] if not is_tool_task(t)
    }
    empty = [name for name, probs in problems.items() if not probs]
    if empty:
        raise KitError(f"No problems selected for {', '.join(empty)} (ids {spec.get('ids')}).",
                       "check eval.ids against the task's problem ids (HumanEval/0, mbpp/11, your jsonl ids).")
    return problems


def _tool_problems(spec: dict) -> dict[str, list]:
    """BFCL's prompts and mbpp-agent's rows as problems for the contamination check (their text is what a model
    could have seen)."""
    from .agent_task import TASK as AGENT
    from .agent_task import agent_problems
    from .toolruns import agent_rows, bfcl_problems

    found = {t: bfcl_problems(spec, t) for t in spec["tasks"] if t.startswith(BFCL_PREFIX)}
    if AGENT in spec["tasks"]:
        found[AGENT] = agent_problems(agent_rows(spec))
    return found


def _contamination(spec: dict, problems: dict[str, list], progress) -> dict[str, dict]:
    """Per task, which problems overlap the training data (n-grams); empty without training data."""
    found: dict[str, dict] = {}
    for name, probs in problems.items() if spec.get("train_data") else ():
        texts = iter_training_texts(spec["train_data"])
        report = check_contamination(probs, texts, spec.get("ngram", 13), min_overlap=spec.get("min_overlap", 0.5))
        found[name] = report.to_dict()
        progress(f"[tunepack] contamination {name}: {len(report.contaminated_ids)}/{report.n_problems} problems "
                 "overlap the training data")
    return found


def _tasks_for(model: dict, problems: dict[str, list], rows: dict, contamination: dict, settings: dict) -> list:
    """The Inspect tasks one model runs; a contaminated task of an adapter is withheld unless allowed."""
    label, tasks = model["label"], []
    for name, probs in problems.items():
        dirty = bool(model.get("adapter")) and bool((contamination.get(name) or {}).get("contaminated"))
        if dirty and not settings["allow"]:
            rows[name]["scores"][label] = None
            rows[name]["status"][label] = "withheld"
            continue
        rows[name]["status"][label] = "contaminated" if dirty else "scored"
        tasks.append(code_task(probs, settings["box"] or DOCKER, settings["samples"], settings["temperature"],
                               settings["max_tokens"], name, settings["limits"]))
    return tasks


def _run_model(model: dict, tasks: list, spec: dict, rows: dict, temperature: float, progress) -> None:
    from inspect_ai import eval as inspect_eval

    label = model["label"]
    name_, args = resolve_model(model, spec.get("backend", "auto"), temperature)
    progress(f"[tunepack] evaluating {label} ({name_}) on {', '.join(t.name for t in tasks)}")
    meter = Meter(", ".join(t.name for t in tasks), label, sum(rows[t.name]["n"] for t in tasks))
    try:
        logs = inspect_eval(tasks, model=name_, model_args=args, log_dir=spec.get("log_dir"),
                            display="none", score=True, fail_on_error=False)
    except Exception as exc:  # noqa: BLE001 - model loading errors surface here, before any sample
        raise KitError(
            f"Inspect could not load or run the {label} model {name_} ({type(exc).__name__}: {str(exc)[:300]}).",
            "check that the model/adapter exists and fits this machine (device, memory); for vLLM use a GPU.",
        ) from exc
    for log in logs:
        res = _task_results(log)
        row = rows[log.eval.task]
        row["scores"][label], row["stderr"][label], row["logs"][label] = res["score"], res["stderr"], res["log"]
    meter(meter.total)


def _code_tasks(spec: dict, problems: dict, contamination: dict, rows: dict, progress) -> str:
    """Run the code tasks (sandboxed); the sandbox mode the results are labelled with."""
    mode = _check_spec(spec)
    if not problems:
        return mode
    limits = Limits(timeout_s=float(spec.get("timeout_s", 10)), memory_mb=int(spec.get("memory_mb", 512)))
    samples, temperature = int(spec.get("samples", 1)), float(spec.get("temperature", 0.0))
    box = None if mode == DOCKER else Sandbox(mode, workers=min(4, os.cpu_count() or 1), limits=limits).start()
    if box is not None:
        mode = box.mode  # "auto" resolved: the mode the results are labelled with
        progress(f"[tunepack] sandbox: {mode}" + (" (auto)" if box.requested == "auto" else "") +
                 ("" if box.isolated else " - NOT ISOLATED: generated code runs as this user"))
    rows.update({name: {"task": name, "metric": "pass@1", "n": len(p), "samples": samples, "scores": {},
                        "stderr": {}, "status": {}, "logs": {}, "contamination": contamination.get(name)}
                 for name, p in problems.items()})
    settings = {"allow": bool(spec.get("allow_contaminated")), "box": box, "samples": samples,
                "temperature": temperature, "limits": limits, "max_tokens": int(spec.get("max_tokens", 512))}
    try:
        for model in spec["models"]:
            check_model(model, spec.get("expected"))
            tasks = _tasks_for(model, problems, rows, contamination, settings)
            if tasks:
                _run_model(model, tasks, spec, rows, temperature, progress)
    finally:
        if box is not None:
            box.close()
    return mode


def run_eval(spec: dict, progress=print, partial=None) -> dict:
    """Every task of the spec on every model: the results. ``partial(results so far)`` after each finished task
    of each model (the missing ones listed), so a job stopped later keeps what finished."""
    _check_spec(spec)
    counting = ensure_token_counting()
    problems = _problems(spec) if any(not is_tool_task(t) for t in spec["tasks"]) else {}
    contamination = _contamination(spec, {**problems, **_tool_problems(spec)}, progress)
    started, rows = time.monotonic(), {}  # type: ignore[var-annotated]
    mode: str | None = _code_tasks(spec, problems, contamination, rows, progress)
    state: dict = {"counting": counting, "mode": mode, "loaded": {}, "started": started}
    if partial is not None and rows:
        partial(_results(spec, rows, state, final=False))
    tool_tasks = [t for t in spec["tasks"] if is_tool_task(t)]
    if tool_tasks:
        def finished(tool_rows: dict) -> None:
            if partial is not None:
                partial(_results(spec, {**rows, **_tool_rows(tool_rows, contamination)}, state, final=False))

        tool_rows, state["loaded"] = run_tool_tasks(spec, tool_tasks, progress, contamination, finished)
        rows.update(_tool_rows(tool_rows, contamination))
    return _results(spec, rows, state, final=True)


def _tool_rows(tool_rows: dict, contamination: dict) -> dict:
    for name, row in tool_rows.items():
        row["contamination"] = contamination.get(name)
    return tool_rows


def _done(row: dict, spec: dict) -> bool:
    return all(model["label"] in row["status"] or model["label"] in row["scores"] for model in spec["models"])


def _results(spec: dict, rows: dict, state: dict, final: bool) -> dict:
    """The results dict: every task's row in the spec's order; before the end, only the tasks every model finished,
    with ``partial`` and the ``missing`` tasks named."""
    names = [task_name(t) if not is_tool_task(t) else t for t in spec["tasks"]]
    ordered = [rows[n] for n in names if n in rows and (final or _done(rows[n], spec))]
    mode = state["mode"]
    if not any(not is_tool_task(t) for t in spec["tasks"]):  # no code task: the sandbox the agent episodes ran in
        mode = next((r["sandbox"] for r in ordered if r.get("sandbox")), None)
    done = {r["task"] for r in ordered}
    extra = {} if final else {"partial": True, "missing": [n for n in names if n not in done]}
    counting, loaded, started = state["counting"], state["loaded"], state["started"]
    return {
        **extra, "tasks": ordered, "sandbox": mode,
        "isolated": (mode in SAFE_MODES or mode == DOCKER) if mode else None,
        "token_counting": counting, "allow_contaminated": bool(spec.get("allow_contaminated")),
        "models": spec["models"], "loaded": loaded, "limit": spec.get("limit"), "ids": spec.get("ids") or [],
        "temperature": float(spec.get("temperature", 0.0)), "duration_s": round(time.monotonic() - started, 2),
    }
