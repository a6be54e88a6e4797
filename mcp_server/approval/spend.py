"""Spending money safely, the one rule every face goes through: quote → human consent → budget charge →
submit → reconcile.

The rooms that start paid work call ``spend`` themselves (the pipeline, evaluations, sweeps, a raw job), so
the MCP tools and the CLI behave the same: a person at the keyboard typing the command is the consent, an
agent needs an MCP elicitation answer or an approval token, and the daily budget applies to everybody.
Finished jobs have their worst-case charge replaced by the real cost in ``reconcile``.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable

from pydantic import BaseModel, Field

from ..jobs import CostEstimate, JobBackend, JobInfo
from .budget import Budget, BudgetStatus
from .gate import Asked, Decision, decide


class Consent(BaseModel):
    """How the human agreed to an action that spends money or publishes."""

    at_keyboard: bool = Field(False, description="a person typed the command in a terminal, or added --yes (the CLI)")
    no_terminal: bool = Field(False, description="a CLI command run without a terminal and without --yes")
    elicited: bool | None = Field(None, description="their answer to an MCP elicitation; None = not asked")
    token: str | None = Field(None, description="an approval token from an earlier quote of the same action")
    part_of: str | None = Field(None, description="an approved whole this action belongs to (a sweep id): each of "
                                                  "its jobs is approved with it, and still charged")
    asked: Asked = Field(default_factory=Asked, description="the MCP call's client, session and server mode")
    reservation: str | None = Field(None, description="a stable name for this action's budget reservation (a sweep "
                                                      "run's attempt): a restarted caller charging it again replaces "
                                                      "the reservation a killed one left, instead of adding to it")

    @classmethod
    def keyboard(cls, yes: bool = False) -> Consent:
        """A CLI command's consent: a person at a terminal typed it, or said --yes; otherwise (no terminal: an
        agent's shell, a pipe) a paid or publishing action is refused. "A terminal" is stdin being a tty, and a
        pseudo-terminal the agent makes itself (`script`, `pty.spawn`) is one: in the same OS account nothing can
        tell it from a person typing; only the custodian mode holds against that (README, Security)."""
        typed = yes or _terminal()
        return cls(at_keyboard=typed, no_terminal=not typed)


def _terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):  # no stdin, or a closed one
        return False


class Spend(BaseModel):
    decision: Decision
    cost: CostEstimate
    job: JobInfo | None = Field(None, description="the submitted job; None while approval is required")
    budget: BudgetStatus | None = Field(None, description="the project's daily budget after the charge (paid jobs)")


def summary_of(tool: str, cost: CostEstimate) -> str:
    return (f"{tool} on {cost.backend}/{cost.flavor} at ${cost.price_per_hour_usd:.2f}/h × {cost.replicas}, "
            f"timeout {cost.timeout_s} s: up to ${cost.worst_case_usd:.2f}")


def approve(action: str, arguments: dict, cost_usd: float, *, needed: bool, summary: str, consent: Consent) -> Decision:
    """The approval half alone (publishing has no cost but may need a yes)."""
    return decide(action, arguments, cost_usd=cost_usd, needs_approval=needed, summary=summary,
                  elicited=consent.elicited, approval_token=consent.token, at_keyboard=consent.at_keyboard,
                  part_of=consent.part_of, no_terminal=consent.no_terminal, asked=consent.asked)


def spend(action: str, arguments: dict, cost: CostEstimate, project: str, submit: Callable[[], JobInfo],
          consent: Consent, budget: Budget | None = None) -> Spend:
    """Submit through the gate. ``arguments`` bind an approval token to this exact action, and so does ``project``
    (the budget the human agreed to charge); ``submit`` runs only once the action is approved and (when paid) its
    worst case is charged to ``project``'s daily budget."""
    decision = approve(action, {**arguments, "budget_project": project}, cost.worst_case_usd,
                       needed=cost.needs_approval, summary=summary_of(action, cost), consent=consent)
    if decision.status == "approval_required":
        return Spend(decision=decision, cost=cost)
    if not cost.paid:
        return Spend(decision=decision, cost=cost, job=submit())
    budget = budget or Budget()
    key = f"pending-{consent.reservation}" if consent.reservation else "pending-" + secrets.token_hex(6)
    budget.charge(project, key, cost.worst_case_usd, cost.price_per_hour_usd, cost.replicas)
    try:
        job = submit()
    except BaseException:
        budget.release(key)
        raise
    budget.rekey(key, f"{job.backend}/{job.id}")
    return Spend(decision=decision, cost=cost, job=job, budget=budget.status(project))


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
