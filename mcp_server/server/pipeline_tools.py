"""MCP tools over the pipeline and the jobs room: validate, render, preflight, run, submit, follow."""

from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

from ..approval import Budget, BudgetStatus, Decision
from ..config import load_config
from ..errors import JobError, TunepackError
from ..jobs import CostEstimate, Hardware, JobInfo, JobSpec, estimate, get_backend, hf_flavors
from ..jobs.views import JobView, LogsView, describe, read_logs
from ..pipeline import precheck_data, remote_timeout, start_pipeline, tiny_model_path
from ..preflight import PreflightReport, preflight
from ..spend import guarded_submit, reconcile
from ..train.render import config_hash, pins, run_name_for, write_script
from .common import Approval, ApprovalToken, elicited as _elicited, Backend, ConfigPath, Flavor, Force, JobId, OptBackend, TimeoutS, guarded

MAX_WAIT_S = 50
MAX_LISTED = 15


class ValidateResult(BaseModel):
    ok: bool
    config: dict
    registry_name: str
    run_name_base: str
    config_hash: str


class RenderResult(BaseModel):
    script_path: str
    run_name: str
    config_hash: str
    pins: list[str]
    how_to_run: str


class SpendResult(BaseModel):
    status: str = Field(description="submitted | approval_required")
    decision: Decision
    cost: CostEstimate
    job: JobInfo | None = None
    run_name: str | None = None
    next_step: str


class JobList(BaseModel):
    jobs: list[JobInfo]
    note: str = ""


def _placement(config_path: str | None, backend: str | None, flavor: str | None,
               timeout_s: int | None) -> tuple[str, str | None, int | None]:
    """Backend, flavor and timeout: the call's values, else the config's `job` section, else local."""
    job = load_config(config_path).job if config_path else None
    return (backend or (job.backend if job else "local"), flavor or (job.flavor if job else None),
            timeout_s or (job.timeout_s if job else None))


def _ask_spend(ctx: Context, config_path: str | None = None, backend: str | None = None, flavor: str | None = None,
               timeout_s: int | None = None, approval_token: str | None = None) -> Any:
    """Resolver: ask the human through elicitation when the client can, and only when it matters."""
    if approval_token:
        return "token"
    try:
        backend, flavor, timeout_s = _placement(config_path, backend, flavor, timeout_s)
        cost = estimate(backend, flavor, timeout_s)
    except Exception:
        return "invalid"  # the tool body reports the real error
    if not cost.needs_approval:
        return "not-needed"
    caps = ctx.client_capabilities
    if caps is None or caps.elicitation is None:
        return "no-elicitation"
    return Elicit(f"tunepack wants to start a job on {cost.backend}/{cost.flavor} (${cost.price_per_hour_usd:.2f}/h, "
                  f"timeout {timeout_s} s): it may cost up to ${cost.worst_case_usd:.2f}. Approve?", Approval)


SpendApproval = Annotated[ElicitationResult[Approval], Resolve(_ask_spend)]


def _spend(tool: str, arguments: dict, backend: str, flavor: str | None, timeout_s: int | None, project: str,
           submit, approval: Any, approval_token: str | None) -> SpendResult:
    cost = estimate(backend, flavor, timeout_s)
    outcome = guarded_submit(tool, arguments, cost, project, submit, elicited=_elicited(approval),
                             approval_token=approval_token)
    if outcome.job is None:
        return SpendResult(status="approval_required", decision=outcome.decision, cost=cost,
                           next_step=outcome.decision.message)
    return SpendResult(status="submitted", decision=outcome.decision, cost=cost, job=outcome.job,
                       next_step=f"follow it with jobs_wait(job_id='{outcome.job.id}')")


def _settle(backend, view: JobView) -> JobView:
    """After a look at a job: settle its budget charge; record a finished remote training run."""
    reconcile(backend)
    if backend.name != "local" and view.job.stage == "COMPLETED" and view.job.labels.get("stage") == "train":
        from ..pipeline_remote import finish_remote

        view.outcome = {**(view.outcome or {}), "registered": finish_remote(backend, view.job.id)}
    if backend.name != "local" and view.job.stage == "COMPLETED" and view.job.labels.get("stage") == "eval":
        from ..evals.service import eval_results

        view.outcome = {**(view.outcome or {}), "evaluated": eval_results(job_id=view.job.id, backend=backend)}
    return view


def register(server) -> None:
    @server.tool()
    @guarded
    def pipeline_validate(config_path: ConfigPath) -> ValidateResult:
        """Check a training config: keys, types, combinations and local paths. Errors name the key, the
        value and the fix."""
        cfg = load_config(config_path)
        return ValidateResult(ok=True, config=cfg.model_dump(mode="json"), registry_name=cfg.registry_name,
                              run_name_base=cfg.run_name, config_hash=config_hash(cfg))

    @server.tool()
    @guarded
    def pipeline_render(config_path: ConfigPath,
                        output_path: Annotated[str, Field(description="Where to write the script.")] = "train.py"
                        ) -> RenderResult:
        """Render the self-contained PEP 723 QLoRA SFT script for a config (runs with python, uv run, or as
        an HF Jobs uv script)."""
        from ..traces.spine import training_config_or_pending

        # data.format traces: the script reads converted rows (sessions on an unreachable Hub: converted at run time)
        cfg, pending = training_config_or_pending(load_config(config_path))
        model_path = str(tiny_model_path(cfg)) if cfg.model.is_tiny else None
        run_name = run_name_for(cfg)
        out = write_script(cfg, output_path, model_path=model_path, run_name=run_name)
        how = f"python {out} (add --check-only for the mask check alone), or uv run {out}"
        if pending:
            how = f"{pending} Run the config with pipeline_run."
        if model_path and not Path(model_path, "config.json").is_file():
            how += (f"; the tiny model is built by pipeline_run/pipeline_preflight, or by hand: "
                    f"tunepack tiny-model --data {' '.join(cfg.data.path)} -o {model_path}")
        return RenderResult(script_path=str(out), run_name=run_name, config_hash=config_hash(cfg), pins=pins(),
                            how_to_run=how)

    @server.tool()
    @guarded
    def pipeline_preflight(config_path: ConfigPath, backend: OptBackend = None, flavor: Flavor = None,
                           timeout_s: TimeoutS = None,
                           smoke: Annotated[bool, Field(description="Also start the mask-check + smoke job.")] = True
                           ) -> PreflightReport:
        """Be sure before spending: validate the config, check the data and the model reference, quote the
        cost, then start a local job running the real mask check and a few smoke steps with a tiny model."""
        try:
            backend, flavor, timeout_s = _placement(config_path, backend, flavor, timeout_s)
        except TunepackError:
            backend = backend or "local"  # preflight reports the config problem as its first check
        return preflight(config_path, backend=backend, flavor=flavor, timeout_s=timeout_s, smoke=smoke)

    @server.tool()
    @guarded
    def pipeline_run(config_path: ConfigPath, approval: SpendApproval, backend: OptBackend = None,
                     flavor: Flavor = None, timeout_s: TimeoutS = None, force: Force = False,
                     approval_token: ApprovalToken = None) -> SpendResult:
        """Start the whole pipeline as one job: train, track, register the adapter with its model card (on HF
        Jobs: data uploaded to a private dataset repo, checkpoints and adapter pushed to a private output repo).
        Returns at once with the job id; paid flavors need human approval first."""
        cfg = load_config(config_path)
        precheck_data(cfg)
        arguments = {"config_path": config_path, "backend": backend, "flavor": flavor, "timeout_s": timeout_s,
                     "force": force}
        backend, flavor, timeout_s = _placement(config_path, backend, flavor, timeout_s)
        if backend != "local":
            timeout_s = remote_timeout(cfg, flavor, timeout_s, force)

        def submit() -> JobInfo:
            return start_pipeline(cfg, backend=get_backend(backend), timeout_s=timeout_s, flavor=flavor,
                                  force=force).job

        result = _spend("pipeline_run", arguments, backend, flavor, timeout_s, cfg.tracking.project, submit,
                        approval, approval_token)
        if result.job:
            result.run_name = result.job.name
        return result

    @server.tool()
    @guarded
    def jobs_submit(approval: SpendApproval,
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
        arguments = {"script_path": script_path, "config_path": config_path, "backend": backend, "flavor": flavor,
                     "timeout_s": timeout_s, "labels": labels, "secrets": secrets, "args": args, "project": project,
                     "force": force}
        backend, flavor, timeout_s = _placement(config_path, backend, flavor, timeout_s)
        if config_path:
            cfg = load_config(config_path)
            project = cfg.tracking.project
            if backend != "local":
                timeout_s = remote_timeout(cfg, flavor, timeout_s, force)

        def submit() -> JobInfo:
            if config_path:
                return start_pipeline(config_path, backend=get_backend(backend), timeout_s=timeout_s, flavor=flavor,
                                      extra_labels=labels, force=force).job
            spec = JobSpec(script=script_path, args=args or [], name=Path(script_path).stem, labels=labels or {},
                           secrets=secrets or [], timeout_s=timeout_s, flavor=flavor)
            return get_backend(backend).submit(spec)

        return _spend("jobs_submit", arguments, backend, flavor, timeout_s, project, submit, approval, approval_token)

    @server.tool()
    @guarded
    def jobs_status(job_id: JobId, backend: Backend = "local") -> JobView:
        """Stage, training progress, outcome or error of one job (a finished HF training job is recorded in
        the registry with its Hub repo + commit)."""
        return _settle(get_backend(backend), describe(get_backend(backend), job_id))

    @server.tool()
    @guarded
    def jobs_logs(job_id: JobId, backend: Backend = "local",
                  tail: Annotated[int, Field(description="Last N lines (at most 200).", ge=1)] = 100,
                  since: Annotated[int | None, Field(description="Line index to page from (next_since of the "
                                                                 "previous call).", ge=0)] = None) -> LogsView:
        """A bounded page of a job's log: the tail, or the lines after a cursor."""
        return read_logs(get_backend(backend), job_id, tail=tail, since=since)

    @server.tool()
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

    @server.tool()
    @guarded
    def jobs_cancel(job_id: JobId, backend: Backend = "local") -> JobView:
        """Cancel a job (its whole process group is stopped)."""
        b = get_backend(backend)
        b.cancel(job_id)
        return _settle(b, describe(b, job_id))

    @server.tool()
    @guarded
    async def jobs_wait(job_id: JobId, ctx: Context, backend: Backend = "local",
                        timeout_s: Annotated[float, Field(description=f"Wait at most this long (≤ {MAX_WAIT_S} s); "
                                                          "call again to keep waiting.", gt=0,
                                                          le=MAX_WAIT_S)] = 30) -> JobView:
        """Wait (bounded) for a job to end, sending progress notifications with the training step and loss."""
        b = get_backend(backend)
        deadline = anyio.current_time() + timeout_s
        last = None
        while True:
            view = await anyio.to_thread.run_sync(describe, b, job_id)
            p = view.progress
            if p and (p.step, p.loss) != last:
                last = (p.step, p.loss)
                message = f"step {p.step}" + (f", loss {p.loss:.4f}" if p.loss is not None else "")
                await ctx.report_progress(p.step, p.max_steps, message=message)
            if view.job.done or anyio.current_time() >= deadline:
                break
            await anyio.sleep(0.5 if b.name == "local" else 5.0)  # remote logs are fetched over HTTP
        view = _settle(b, view)
        if not view.job.done:
            view.next_step = "still running: call jobs_wait again"
        return view

    @server.tool()
    @guarded
    def jobs_hardware(backend: Backend = "hf") -> list[Hardware]:
        """Hardware flavors with their hourly price in USD (live from HF Jobs when a token is available,
        else tunepack's price table)."""
        if backend == "hf":
            try:
                return get_backend("hf").hardware()
            except TunepackError:
                return list(hf_flavors())
        return get_backend(backend).hardware()

    @server.tool()
    @guarded
    def jobs_cost(flavor: Flavor = None, timeout_s: TimeoutS = None, backend: Backend = "hf",
                  replicas: Annotated[int, Field(description="Number of machines.", ge=1)] = 1,
                  expected_s: Annotated[float | None, Field(description="Expected runtime, for the expected cost.",
                                                            gt=0)] = None) -> CostEstimate:
        """Quote a job: worst case (price × timeout × replicas), expected cost, and whether it needs approval."""
        return estimate(backend, flavor, timeout_s, replicas, expected_s)

    @server.tool()
    @guarded
    def budget_status(project: Annotated[str, Field(description="Project whose daily budget to show.")] = "tunepack"
                      ) -> BudgetStatus:
        """Today's spending budget for a project: limit, charged (worst case for running jobs), remaining.
        Only a human changes the limit (`tunepack budget set PROJECT USD`)."""
        reconcile(get_backend("local"))
        return Budget().status(project)
