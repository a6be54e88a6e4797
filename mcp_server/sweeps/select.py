"""Pick the best run of a sweep: rank the completed runs on the selection metric (or another one),
name the best run and its adapter, and — once every run has finished — write keep / discard / crash to
the ledger. Publishing the winner is a separate, approved step (``registry_publish``)."""

from __future__ import annotations

import math
import time

from pydantic import BaseModel, Field

from ..jobs import get_backend
from ..ledger import Ledger, Plateau, direction_for
from .monitor import eval_task_metric, eval_value, metric_records, metric_value
from .report import runs_table
from .spec import describe
from .state import FINAL, RunState, SweepState, read_state, sweep_dir, updating


class RankedRun(BaseModel):
    rank: int | None = Field(description="1 = best; None = not ranked (not completed, or no value).")
    run: str
    changes: str
    status: str
    metric_value: float | None
    registry_name: str | None = None
    registry_version: int | None = None
    adapter: str | None = Field(None, description="Local registry folder, or the Hub repo of a remote run.")
    trackio_run: str | None = None
    ledger: str | None = Field(None, description="What was recorded in the ledger for this run.")


class Selection(BaseModel):
    sweep_id: str
    sweep_status: str
    metric: dict
    ranking: list[RankedRun]
    best: RankedRun | None
    recorded: bool = Field(description="True when keep/discard/crash were written to the ledger.")
    ledger_note: str
    plateau: Plateau | None = None
    within_noise: str | None = Field(None, description="Set when the best two runs are within noise of each other.")
    table: str
    next_step: str


def _same_values(a: dict, b: dict) -> bool:
    """The run's recorded value serves: same metric, and (for a best-of reduce) the same direction."""
    if a["name"] != b["name"] or a["reduce"] != b["reduce"]:
        return False
    return a["reduce"] == "last" or eval_task_metric(a["name"]) or a["direction"] == b["direction"]


def _value(run: RunState, state: SweepState, metric: dict, backend) -> float | None:
    if run.status != "completed":
        return None
    if _same_values(metric, state.metric):
        return run.metric_value
    if eval_task_metric(metric["name"]):
        summary = run.eval
        if summary is None and run.result:
            try:
                from ..registry import LocalRegistry

                registry = LocalRegistry()
                summary = registry.eval_results(registry.get(run.result["registry_name"],
                                                             run.result["registry_version"]))
            except Exception:
                summary = None
        return eval_value(summary, metric["name"])
    if backend is None or not run.job_id:
        return None
    return metric_value(metric_records(backend.logs(run.job_id)), metric["name"], metric["direction"],
                        metric["reduce"])


def _ranked(run: RunState, rank: int | None, value: float | None) -> RankedRun:
    result = run.result or {}
    return RankedRun(rank=rank, run=run.id, changes=describe(run.changes),
                     status=run.status + (f" ({run.failure})" if run.failure else ""), metric_value=value,
                     registry_name=result.get("registry_name"), registry_version=result.get("registry_version"),
                     adapter=result.get("hub_repo") or result.get("adapter_path"), trackio_run=run.run_name)


def select_sweep(sweep_id: str, metric: str | None = None, direction: str | None = None, reduce: str | None = None,
                 record: bool = True) -> Selection:
    folder = sweep_dir(sweep_id)
    state = read_state(folder)
    chosen = dict(state.metric)
    if metric and metric != chosen["name"]:
        chosen = {"name": metric, "direction": direction or direction_for(metric), "reduce": reduce or "last"}
    else:
        chosen.update({k: v for k, v in (("direction", direction), ("reduce", reduce)) if v})
    needs_logs = not _same_values(chosen, state.metric) and not eval_task_metric(chosen["name"])
    backend = get_backend(state.backend) if needs_logs else None
    values = {r.id: _value(r, state, chosen, backend) for r in state.runs}
    finite = {rid: v for rid, v in values.items() if v is not None and math.isfinite(v)}
    order = sorted(finite, key=lambda rid: finite[rid] if chosen["direction"] == "min" else -finite[rid])
    rank = {rid: n for n, rid in enumerate(order, start=1)}
    ranking = [_ranked(r, rank.get(r.id), values[r.id]) for r in
               sorted(state.runs, key=lambda r: (rank.get(r.id, len(rank) + 1), r.id))]
    best = ranking[0] if order else None
    noise = within_noise(order, finite, chosen["name"])
    finished = all(r.status in FINAL for r in state.runs)
    ledger = Ledger(state.ledger)
    recorded, note = False, ""
    if not record:
        note = "not recorded (record=false)"
    elif not finished:
        note = "the sweep is still running: the ledger is written once every run has finished (call again)"
    elif (established := ledger.metric()) and established != chosen["name"]:
        note = (f"ledger project '{state.ledger}' ranks on '{established}', not '{chosen['name']}': nothing recorded; "
                f"select on '{established}' to record")
    else:
        # in the order the runs ended: the ledger's "finished since the best" counts runs that ended after it
        for entry in sorted(ranking, key=lambda e: (state.run(e.run).ended_at or 0.0, e.run)):
            run = state.run(entry.run)
            entry.ledger = _record(ledger, run, entry, best, chosen, sweep_id, len(order))
        recorded, note = True, f"recorded in ledger project '{state.ledger}'"
    view = state.model_copy(deep=True)
    for r in view.runs:
        r.metric_value = values[r.id]
    table = runs_table(view, order, chosen["name"])
    if best is None:
        nxt = ("no completed run has a value for " + chosen["name"] + (": wait for the runs (sweep_status)"
               if not finished else ": read the failures in sweep_status, fix, and plan a new sweep"))
    elif best.registry_name and best.adapter and best.adapter.count("/") == 1 and not best.adapter.startswith("/"):
        nxt = (f"best: {best.run} — its adapter is in the private Hub repo {best.adapter} (registry "
               f"{best.registry_name} v{best.registry_version}); registry_publish publishes it elsewhere or publicly "
               "(with the human's yes)")
    else:
        nxt = (f"best: {best.run} — publish it with registry_publish(name='{best.registry_name}', "
               f"version={best.registry_version}, repo_id='NAMESPACE/{best.registry_name}') (private by default; "
               "public needs the human's yes), or evaluate it first (eval_start)")
    if noise:
        nxt = f"{noise}. {nxt}"
    selection = Selection(sweep_id=sweep_id, sweep_status=state.status, metric=chosen, ranking=ranking, best=best,
                          recorded=recorded, ledger_note=note, plateau=ledger.plateau() if recorded else None,
                          within_noise=noise, table=table, next_step=nxt)
    with updating(folder) as st:
        st.selection = {"at": time.time(), "metric": chosen, "best": best.model_dump() if best else None,
                        "order": order, "recorded": recorded, "within_noise": noise}
    return selection


NOISE = 0.01  # a relative gap under 1 % between the best two runs is no evidence that one is better


def within_noise(order: list[str], values: dict[str, float], name: str) -> str | None:
    """A sentence when the best two runs are within noise of each other (their relative gap under 1 %)."""
    if len(order) < 2:
        return None
    a, b = values[order[0]], values[order[1]]
    gap = abs(a - b) / max(abs(a), abs(b), 1e-12)
    if gap >= NOISE:
        return None
    return (f"{order[0]} and {order[1]} are within noise on {name} ({a:.4g} vs {b:.4g}: {gap:.2%} apart, under "
            f"{NOISE:.0%}): the ranking does not show one setting is better; the runner-up is not condemned (it may "
            "be repeated), and more held-out data or seeds would tell them apart")


def _record(ledger: Ledger, run: RunState, entry: RankedRun, best: RankedRun | None, metric: dict, sweep_id: str,
            ranked: int) -> str | None:
    if run.experiment_id is None:
        return None
    if ledger.get(run.experiment_id).status == "proposed":
        ledger.claim(f"sweep-select:{sweep_id}", run.experiment_id)
    value = entry.metric_value
    kwargs = {"metric_value": value, "metric_name": metric["name"]} if value is not None else {}
    if best is not None and entry.run == best.run:
        status, dnr, note = "keep", False, f"best of sweep {sweep_id} on {metric['name']}"
    elif run.status == "completed":
        status, dnr = "discard", False  # a healthy run that lost: its values are not condemned
        note = (f"rank {entry.rank} of {ranked} in sweep {sweep_id}" if entry.rank else
                f"sweep {sweep_id}: no value for {metric['name']}")
    elif run.status == "stopped":  # the controller recorded why, and whether the settings may be tried again
        status, dnr, note = "discard", None, None
    else:
        status, dnr, note = "crash", False, None
    e = ledger.record(run.experiment_id, status, do_not_repeat=dnr, note=note, **kwargs)
    return f"#{e.id} {e.status}" + (" (do-not-repeat)" if e.do_not_repeat else "")
