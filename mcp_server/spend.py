"""Spending money safely: quote → human approval → budget reservation → submit → reconcile.

Every tool that can start a paid job goes through ``guarded_submit``; finished jobs have their
worst-case charge replaced by the real cost in ``reconcile``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from pydantic import BaseModel

from .approval import Budget, Decision, decide
from .jobs import CostEstimate, JobBackend, JobInfo


class GuardedSubmit(BaseModel):
    decision: Decision
    cost: CostEstimate
    job: JobInfo | None = None


def guarded_submit(tool: str, arguments: dict, cost: CostEstimate, project: str, submit: Callable[[], JobInfo], *,
                   elicited: bool | None, approval_token: str | None, budget: Budget | None = None) -> GuardedSubmit:
    summary = (f"{tool} on {cost.backend}/{cost.flavor} at ${cost.price_per_hour_usd:.2f}/h × {cost.replicas}, "
               f"timeout {cost.timeout_s} s: up to ${cost.worst_case_usd:.2f}")
    decision = decide(tool, arguments, cost_usd=cost.worst_case_usd, needs_approval=cost.needs_approval,
                      summary=summary, elicited=elicited, approval_token=approval_token)
    if decision.status == "approval_required":
        return GuardedSubmit(decision=decision, cost=cost)
    if not cost.paid:
        return GuardedSubmit(decision=decision, cost=cost, job=submit())
    budget = budget or Budget()
    key = "pending-" + secrets.token_hex(6)
    budget.charge(project, key, cost.worst_case_usd, cost.price_per_hour_usd, cost.replicas)
    try:
        job = submit()
    except BaseException:
        budget.release(key)
        raise
    budget.rekey(key, f"{job.backend}/{job.id}")
    return GuardedSubmit(decision=decision, cost=cost, job=job)


def reconcile(backend: JobBackend, budget: Budget | None = None) -> None:
    """Settle the charges of jobs on this backend that have ended."""
    budget = budget or Budget()
    prefix = f"{backend.name}/"
    for key in budget.open_job_ids():
        if not key.startswith(prefix):
            continue
        try:
            info = backend.status(key[len(prefix):])
        except Exception:  # a job the backend no longer knows keeps its worst-case charge
            continue
        if info.done:
            budget.reconcile(key, info.runtime_s)
