"""What ``sweep_status`` shows: one row per run (state, step, last loss, metric, cost so far), the canary,
the alerts, and whether the controller is alive — a crashed controller is named, with how to resume."""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from .report import ranked, runs_table
from .run import controller_health
from .spec import describe
from .state import ACTIVE, read_state, sweep_dir

MAX_ROWS = 40


class RunRow(BaseModel):
    run: str
    changes: str
    status: str
    step: int | None
    max_steps: int | None
    last_loss: float | None
    metric: float | None = Field(description="The selection metric (last logged value, or the eval score).")
    cost_usd: float
    attempts: int
    job_id: str | None
    note: str | None = None


class SweepStatusView(BaseModel):
    sweep_id: str
    status: str = Field(description="starting | running | done | canary_failed | canceled")
    controller: dict = Field(description="state: alive | finished | crashed | starting; job_id; detail")
    metric: dict
    canary: dict | None
    counts: dict[str, int]
    cost_usd: float = Field(description="Cost so far of all runs (price × runtime).")
    rows: list[RunRow]
    alerts: list[dict] = Field(description="The latest alerts (early stops, a failed canary).")
    table: str
    report: dict | None
    updated_s_ago: float
    next_step: str


def sweep_status(sweep_id: str) -> SweepStatusView:
    folder = sweep_dir(sweep_id)
    state = read_state(folder)
    health = controller_health(state)
    counts: dict[str, int] = {}
    for r in state.runs:
        counts[r.status] = counts.get(r.status, 0) + 1
    rows = [RunRow(run=r.id, changes=describe(r.changes), status=r.status + (f" ({r.failure})" if r.failure else ""),
                   step=r.step, max_steps=r.max_steps, last_loss=r.last_loss, metric=r.metric_value,
                   cost_usd=r.cost_usd, attempts=r.attempts, job_id=r.job_id,
                   note=next(iter((r.error or r.note or "").splitlines()), None) if (r.error or r.note) else None)
            for r in state.runs][:MAX_ROWS]
    for row in rows:
        if row.note and len(row.note) > 240:
            row.note = row.note[:240] + " …"
    if health["state"] == "crashed":
        nxt = (f"the controller is gone ({health['detail'][:300]}); runs already submitted keep going. Resume it "
               f"with sweep_submit(resume='{sweep_id}') (`tunepack sweep resume {sweep_id}`)")
    elif state.status == "done":
        nxt = "done: sweep_select ranks the runs and records keep/discard in the ledger; sweep_report draws them"
    elif state.status == "canary_failed":
        nxt = (f"the canary failed, so nothing else started: {(state.canary or {}).get('failed', '')[:400]} — fix the "
               "config and submit again")
    elif state.status == "canceled":
        nxt = "canceled"
    else:
        active = sum(1 for r in state.runs if r.status in ACTIVE)
        nxt = f"running ({active} active): call sweep_status again in a minute"
    return SweepStatusView(
        sweep_id=state.id, status=state.status, controller=health, metric=state.metric, canary=state.canary,
        counts=counts, cost_usd=round(sum(r.cost_usd for r in state.runs), 4), rows=rows, alerts=state.alerts[-5:],
        table=runs_table(state, ranked(state)), report=state.report,
        updated_s_ago=round(time.time() - state.updated_at, 1), next_step=nxt)
