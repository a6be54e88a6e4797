"""MCP tools of the jobs room: submit, follow, list, cancel, hardware and cost, the daily budget."""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from ..approval import Budget, BudgetStatus, reconcile
from ..errors import JobError
from ..jobs import CostEstimate, Hardware, JobInfo, JobSpec, available_hardware, estimate, get_backend
from ..jobs.views import JobView, LogsView, describe, read_logs
from ..pipeline import start_pipeline, submit_script
from ..pipeline.settle import settle
from ..shown import shown
from .common import ApprovalToken, Backend, Flavor, Force, JobId, OptBackend, TimeoutS, consent_from, guarded
from .pipeline_tools import PlacedConfig, SpendApproval, SpendResult, spend_result

MAX_WAIT_S = 600  # the harness configs tunepack writes give an MCP call longer (harness.render.TOOL_TIMEOUT_S)
MAX_LISTED = 15


class JobList(BaseModel):
    jobs: list[JobInfo]
    note: str = ""


def _settled(backend, view: JobView) -> JobView:
    """A job view after settling (budget; a finished remote training run or eval recorded)."""
    recorded = settle(backend, view.job)
    if recorded:
        view.outcome = {**(view.outcome or {}), **recorded}
    return view


@guarded
def jobs_submit(ctx: Context, approval: SpendApproval, placed: PlacedConfig,
                script_path: Annotated[str | None, Field(description="A rendered script to run.")] = None,
                config_path: Annotated[str | None, Field(description="Or a config: runs the whole pipeline.")] = None,
                backend: OptBackend = None, flavor: Flavor = None, timeout_s: TimeoutS = None,
                labels: Annotated[dict[str, str] | None, Field(description="Labels to find the job by.")] = None,
                secrets: Annotated[list[str] | None, Field(description="Secret NAMES only (e.g. HF_TOKEN); "
                                                                       "values are read from the environment.")] = None,
                args: Annotated[list[str] | None, Field(description="Arguments for the script.")] = None,
                project: Annotated[str, Field(description="Project charged in the budget.")] = "tunepack",
                force: Force = False, approval_token: ApprovalToken = None) -> SpendResult:
    """Submit a job: a rendered script (or a config, which runs the pipeline). Paid flavors need human
    approval and fit the daily budget."""
    if bool(script_path) == bool(config_path):
        raise JobError("Give exactly one of script_path or config_path.",
                       "pass script_path for a rendered script, or config_path to run the pipeline.")
    if placed.error:
        raise placed.error
    consent = consent_from(approval, approval_token, ctx)
    if config_path:
        assert placed.cfg is not None, "place() read the config at config_path (a failure is placed.error)"
        started = start_pipeline(placed.cfg, backend=placed.backend, timeout_s=placed.timeout_s,
                                 flavor=placed.flavor, extra_labels=labels, force=force, consent=consent)
        return spend_result(started.spend, run_name=started.run_name)
    spec = JobSpec(script=script_path, args=args or [], labels=labels or {}, secrets=secrets or [],
                   timeout_s=placed.timeout_s, flavor=placed.flavor)
    return spend_result(submit_script(spec, placed.backend, project=project, consent=consent))


@guarded
def jobs_status(job_id: JobId, backend: Backend = "local") -> JobView:
    """Stage, progress, outcome or error of one job (a finished HF training job is registered with its Hub
    commit)."""
    b = get_backend(backend)
    return _settled(b, describe(b, job_id))


@guarded
def jobs_logs(job_id: JobId, backend: Backend = "local",
              tail: Annotated[int, Field(description="Last N lines (at most 200).", ge=1)] = 100,
              since: Annotated[int | None, Field(description="Page from this line (the last call's next_since).",
                                                 ge=0)] = None) -> LogsView:
    """A bounded page of a job's log: the tail, or the lines after a cursor."""
    return shown(read_logs(get_backend(backend), job_id, tail=tail, since=since))  # a script may print a secret


@guarded
def jobs_list(backend: Backend = "local",
              labels: Annotated[dict[str, str] | None, Field(description="Only jobs with all these labels "
                                                             "(e.g. {'stage': 'train'}).")] = None,
              stage: Annotated[str | None, Field(description="SCHEDULING, RUNNING, COMPLETED, ERROR or "
                                                             "CANCELED.")] = None) -> JobList:
    """Jobs, newest first, filtered by labels and stage."""
    jobs = get_backend(backend).list(labels=labels, stage=stage)
    note = (f"{len(jobs) - MAX_LISTED} older jobs not shown; filter by labels or stage"
            if len(jobs) > MAX_LISTED else "")
    return JobList(jobs=jobs[:MAX_LISTED], note=note)


@guarded
def jobs_cancel(job_id: JobId, backend: Backend = "local") -> JobView:
    """Cancel a job (its whole process group is stopped)."""
    b = get_backend(backend)
    b.cancel(job_id)
    return _settled(b, describe(b, job_id))


def progress_note(p) -> tuple[float, float | None, str]:
    """(progress, total, message) for a progress notification: a training step and its loss, or an eval's task,
    model and items done with the time left."""
    if p.step is not None:
        return p.step, p.max_steps, f"step {p.step}" + (f", loss {p.loss:.4f}" if p.loss is not None else "")
    eta = f", about {p.eta_s:.0f} s left" if p.eta_s is not None else ""
    return float(p.done or 0), p.total, f"{p.task} on {p.model}: {p.done}/{p.total}{eta}"


@guarded
async def jobs_wait(job_id: JobId, ctx: Context, backend: Backend = "local",
                    timeout_s: Annotated[float, Field(description=f"Wait at most this long (≤ {MAX_WAIT_S} s, under the "
                                                      "client's tool timeout).", gt=0, le=MAX_WAIT_S)] = 240
                    ) -> JobView:
    """Wait (bounded) for a job to end, with progress notifications."""
    b = get_backend(backend)
    deadline = anyio.current_time() + timeout_s
    last = None
    while True:
        view = await anyio.to_thread.run_sync(describe, b, job_id)
        p = view.progress
        if p and (p.step, p.loss, p.task, p.model, p.done) != last:
            last = (p.step, p.loss, p.task, p.model, p.done)
            await ctx.report_progress(*progress_note(p))
        if view.job.done or anyio.current_time() >= deadline:
            break
        await anyio.sleep(0.5 if b.name == "local" else 5.0)  # remote logs are fetched over HTTP
    view = await anyio.to_thread.run_sync(_settled, b, view)
    if not view.job.done:
        view.next_step = "still running: call jobs_wait again"
    return view


@guarded
def jobs_hardware(backend: Backend = "hf") -> list[Hardware]:
    """Hardware flavors with their hourly price in USD (live from HF Jobs when a token is available,
    else tunepack's price table)."""
    return available_hardware(backend)


@guarded
def jobs_cost(flavor: Flavor = None, timeout_s: TimeoutS = None, backend: Backend = "hf",
              replicas: Annotated[int, Field(description="Number of machines.", ge=1)] = 1,
              expected_s: Annotated[float | None, Field(description="Expected runtime, for the expected cost.",
                                                        gt=0)] = None) -> CostEstimate:
    """Quote a job: worst case (price × timeout × replicas), expected cost, and whether it needs approval."""
    return estimate(backend, flavor, timeout_s, replicas, expected_s)


@guarded
def budget_status(project: Annotated[str, Field(description="Project whose daily budget to show.")] = "tunepack"
                  ) -> BudgetStatus:
    """Today's spending budget for a project: limit, charged (worst case for running jobs), remaining.
    Only a human changes the limit (`tunepack budget set PROJECT USD`)."""
    reconcile(get_backend("local"))
    return Budget().status(project)


TOOLS = [jobs_submit, jobs_status, jobs_logs, jobs_list, jobs_cancel, jobs_wait, jobs_hardware, jobs_cost,
         budget_status]
