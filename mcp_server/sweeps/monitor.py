"""Reading a run from its job log: metric lines, divergence, why a job failed, and alerts.

Remote runs have no local Trackio, so everything the controller knows about a run comes from the
``TUNEPACK_METRIC`` lines in its job log — the same for local and HF jobs.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
import time
from typing import Literal, TypeGuard

from ..jobs import JobInfo, markers
from ..tracking.divergence import Verdict, diverging
from .state import RunState, trim_curve

LOSS_KEYS = ("loss", "eval_loss")
INFRA = re.compile(r"time ?out|timed out|time limit|\blost\b|disappeared|preempt|evict|infrastructure|"
                   r"node (failure|lost|unavailable)|capacity|unavailable|machine restarted", re.I)
SCRIPT_SIGNS = ("TUNEPACK_ERROR ", "Traceback (most recent call last)")


SCRIPT_EVAL = ("eval/reward", "eval/monitor/", "eval/distill/", "eval/env_reward", "eval/env/")  # curves the scripts log


def eval_task_metric(name: str) -> bool:
    """An eval task's score (eval/<task>/<metric>, read from the run's eval results), rather than a metric the
    training script logs itself (loss, eval_loss, GRPO's eval/reward and eval/monitor/*, eval/distill/*)."""
    return name.startswith("eval/") and not name.startswith(SCRIPT_EVAL)


def metric_records(log_text: str) -> list[dict]:
    return [m for m in markers.parse(log_text).get("METRIC", []) if "step" in m]


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and math.isfinite(value)


def metric_value(records: list[dict], name: str, direction: str, reduce: str = "last") -> float | None:
    """A logged metric's last (or best) finite value."""
    values = [r[name] for r in records if name in r and _finite(r[name])]
    if not values:
        return None
    if reduce == "best":
        return min(values) if direction == "min" else max(values)
    return values[-1]


def eval_value(summary: dict | None, name: str) -> float | None:
    """``eval/<task>/<metric>`` (eval/humaneval/pass@1, eval/next_action/tool_name, eval/bfcl/simple_python): the
    adapter's score in an eval summary; None when withheld, contaminated or absent."""
    from ..evals.kit.scorenames import scores_by_name

    if not summary or summary.get("error"):
        return None
    value = scores_by_name(summary, "adapter").get(name)
    return float(value) if _finite(value) else None


def update_from_log(run: RunState, records: list[dict], metric: dict) -> None:
    """Step, losses, the selection metric and the curve of a run, from its metric lines."""
    if not records:
        return
    last = records[-1]
    run.step = int(last["step"])
    run.max_steps = last.get("max_steps") or run.max_steps
    losses = [r["loss"] for r in records if "loss" in r]
    if losses:
        run.first_loss, run.last_loss = losses[0], losses[-1]
    name = metric["name"]
    if not eval_task_metric(name):
        run.metric_value = metric_value(records, name, metric["direction"], metric["reduce"])
    keys = {"loss", "eval_loss", name}
    run.curve = trim_curve([{"step": int(r["step"]), **{k: r[k] for k in keys if k in r}}
                            for r in records if any(k in r for k in keys)])


def clean_loss_logs(records: list[dict]) -> int:
    """How many training-loss logs there are, or -1 once any loss is not finite."""
    losses = [r["loss"] for r in records if "loss" in r]
    return -1 if any(not _finite(v) for v in losses) else len(losses)


def divergence(records: list[dict], patience: int) -> Verdict:
    """Whether a run should stop, by the one divergence rule (tracking/divergence.py): a NaN/inf loss, or the
    training loss above its reference after warmup for ``patience`` consecutive logs."""
    for r in records:
        for key in LOSS_KEYS:
            if key in r and not _finite(r[key]):
                return Verdict("nan", f"{key} became {r[key]} at step {r['step']}: training diverged numerically")
    points = [(int(r["step"]), float(r["loss"]), r.get("learning_rate")) for r in records if "loss" in r]
    return diverging(points, patience)


def failure_kind(info: JobInfo, log_text: str) -> Literal["infra", "script"]:
    """'infra' when the job was lost or timed out with no error from the script, else 'script'.
    Only infrastructure failures are retried: a crash in the script would crash again."""
    if any(sign in log_text for sign in SCRIPT_SIGNS):
        return "script"
    if info.stage == "DELETED":
        return "infra"
    if info.message and INFRA.search(info.message):
        return "infra"
    return "script"


def fire_alert(project: str, run_name: str, title: str, text: str, *, level: str = "error",
               step: int | None = None, run_id: str | None = None) -> dict:
    """Record an alert on the run's Trackio run (``trackio.alert``; printed, stored, shown in the dashboard,
    sent to TRACKIO_WEBHOOK_URL when set). Returns the alert as the sweep state keeps it — with why Trackio
    could not take it, when it could not (trackio missing, say)."""
    entry = {"at": time.time(), "run": run_id, "trackio_run": run_name, "title": title, "text": text,
             "level": level, "step": step, "trackio": False}
    try:
        with contextlib.redirect_stdout(sys.stderr):
            import trackio

            trackio.init(project=project, name=run_name, resume="allow")
            levels = {"info": trackio.AlertLevel.INFO, "warn": trackio.AlertLevel.WARN,
                      "error": trackio.AlertLevel.ERROR}
            trackio.alert(title, text, level=levels.get(level, trackio.AlertLevel.WARN))
            trackio.finish()
        entry["trackio"] = True
    except Exception as exc:  # the alert is still recorded in the sweep state
        entry["trackio_error"] = f"{type(exc).__name__}: {exc}"
    return entry
