"""Submit, resume and cancel sweeps. Each returns at once: the work happens in the controller job.

``submit_sweep`` plans the sweep, refuses it over its budget cap or the day's budget, asks for one
human approval for the whole sweep when any run is paid (the same gate as every paid job: MCP
elicitation, or a quote with a single-use approval token bound to the arguments and the total),
proposes one ledger experiment per run, writes the sweep folder and starts the controller as a local
job (``python -m mcp_server.sweeps.controller SWEEP_DIR``) that takes no local slot.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ..approval import ApprovalError, Consent, Decision, approve
from ..approval.custodian import active as custodian_active
from ..approval.custodian import refuse_agent_code
from ..config import TrainConfig
from ..config.agent_code import CUSTODIAN_FIX, agent_code_paths
from ..home import trackio_dir
from ..jobs import JobInfo, JobSpec, get_backend
from ..ledger import Ledger, LedgerError
from .plan import SweepPlan, build_plan, identity, ledger_variable
from .spec import SweepError, SweepSpec, describe, dump_spec
from .state import (
    ACTIVE,
    FINAL,
    RunState,
    SweepState,
    new_sweep_id,
    read_state,
    sweep_dir,
    sweeps_root,
    updating,
    write_json,
    write_state,
)

CONTROLLER_MODULE = "mcp_server.sweeps.controller"


class SubmitResult(BaseModel):
    status: Literal["submitted", "approval_required", "resumed"]
    sweep_id: str | None = None
    decision: Decision | None = None
    plan: SweepPlan | None = Field(None, description="The plan that was approved (or needs approval).")
    controller_job: JobInfo | None = None
    next_step: str


def _summary(plan: SweepPlan) -> str:
    return (f"sweep '{plan.name}': {plan.total_runs} runs on {plan.backend}/{plan.flavor or 'default'}, at most "
            f"{plan.max_concurrent} at once: up to ${plan.total_worst_case_usd:.2f} in total (worst case), "
            f"about ${plan.total_expected_usd or 0:.2f} expected")


def _content_hash(spec: SweepSpec, configs: dict[str, dict]) -> str:
    canonical = json.dumps({"spec": spec.model_dump(mode="json"), "configs": configs}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _check_runnable(plan: SweepPlan) -> None:
    if plan.total_runs == 0:
        raise SweepError("Every run of this sweep is refused by the ledger: " + "; ".join(
            f"{r.id}: {r.refused}" for r in plan.runs) + ".",
            "change the grid (ledger_list shows what was tried and what is do-not-repeat).")
    if not plan.within_budget:
        raise ApprovalError(f"Budget refused: {'; '.join(n for n in plan.notes if 'cost up to' in n)}.",
                            "shrink the sweep (fewer runs, shorter timeout_s, a cheaper flavor), raise budget_usd in "
                            "the spec, or ask the human to raise the daily budget (`tunepack budget set PROJECT USD`).")


def _reserve_folder(name: str) -> tuple[str, Path]:
    """A new sweep id and its folder, created (two submissions may come in one second)."""
    sweep_id = new_sweep_id(name)
    while True:
        folder = sweeps_root() / sweep_id
        try:
            folder.mkdir(parents=True)
            return sweep_id, folder
        except FileExistsError:
            sweep_id = new_sweep_id(name) + f"-{secrets.token_hex(2)}"


def _propose_runs(plan: SweepPlan, configs: dict[str, dict], sweep_id: str, folder: Path,
                  owner: str | None = None) -> list[RunState]:
    """One ledger experiment per live run; if the ledger refuses one, none of this sweep stays proposed."""
    ledger = Ledger(plan.ledger)
    runs: list[RunState] = []
    try:
        for planned in (r for r in plan.runs if r.refused is None):
            config = configs[planned.id]
            config["tracking"]["run_name"] = f"{sweep_id}-{planned.id}"
            if owner and not config["output"].get("hub_repo_id"):  # one output repo per run: concurrent runs
                config["output"]["hub_repo_id"] = f"{owner}/{config['tracking']['run_name']}"[:96]  # never share
            variable, value = ledger_variable(planned.changes)
            experiment = ledger.propose(
                f"sweep {sweep_id} run {planned.id}: {describe(planned.changes)}", variable, value,
                config=identity(TrainConfig.model_validate(config)), note=f"sweep {sweep_id}",
                expected=f"{plan.metric['name']} ({plan.metric['direction']}) beats the other runs")
            runs.append(RunState(id=planned.id, changes=planned.changes, run_name=config["tracking"]["run_name"],
                                 config_hash=planned.config_hash, experiment_id=experiment.id, canary=planned.canary))
    except LedgerError:  # someone recorded the same change meanwhile
        for run in runs:
            assert run.experiment_id is not None, "set just above from the proposed experiment"
            ledger.claim("sweep-submit", run.experiment_id)
            ledger.record(run.experiment_id, "crash", note=f"sweep {sweep_id} not started: a run repeats the ledger")
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return runs


def _hub_owner(plan: SweepPlan) -> str | None:
    """The namespace remote runs push to (the token's user), for the hf backend; None without a readable token
    (each run then names its repo when it starts, and shares the config's output repo)."""
    if plan.backend == "local":
        return None
    from ..errors import TunepackError
    from ..hf_auth import permissions

    try:
        return permissions().user
    except TunepackError:
        return None


def _record(folder: Path, sweep_id: str, source: str | Path | dict, built: tuple, runs: list[RunState],
            approved: bool) -> None:
    """plan.json, spec.yaml and the first state.json of the sweep."""
    plan, configs, spec = built
    write_json(folder / "plan.json", {"plan": plan.model_dump(mode="json"), "spec": {
        **spec.model_dump(mode="json"), "source": str(source) if not isinstance(source, dict) else None},
        "configs": {r.id: configs[r.id] for r in runs}})
    (folder / "spec.yaml").write_text(dump_spec(spec), encoding="utf-8")
    now = time.time()
    write_state(folder, SweepState(
        id=sweep_id, name=spec.name, created_at=now, updated_at=now, backend=plan.backend, flavor=plan.flavor,
        project=plan.project, ledger=plan.ledger, metric=plan.metric, max_concurrent=plan.max_concurrent,
        canary={**plan.canary, "passed": False} if plan.canary else None, early_stop=plan.early_stop,
        retries=plan.retries, budget_cap_usd=plan.budget_cap_usd,
        approved_usd=plan.total_worst_case_usd if approved else 0.0, runs=runs))


def submit_sweep(source: str | Path | dict, *, base_dir: str | Path | None = None, consent: Consent | None = None,
                 arguments: dict | None = None, tool: str = "sweep_submit", start: bool = True,
                 built: tuple | None = None) -> SubmitResult:
    """Plan (or take ``built``, what ``build_plan`` returned for this source), check the budget, get the human's
    yes for paid runs (``consent``: how they gave it), record, and start the controller."""
    built = built or build_plan(source, base_dir)
    plan, configs, spec = built
    _check_runnable(plan)
    if plan.backend == "local" and custodian_active():
        found = {p for c in configs.values() for p in agent_code_paths(TrainConfig.model_validate(c))}
        refuse_agent_code("this local sweep", sorted(found), CUSTODIAN_FIX)
    arguments = arguments if arguments is not None else {"spec": str(source) if not isinstance(source, dict) else source}
    # the approval binds to what would run (the spec and every run's config), not only to the file's path
    arguments = {**arguments, "sweep_sha256": _content_hash(spec, configs)}
    decision = approve(tool, arguments, plan.total_worst_case_usd, needed=plan.needs_approval,
                       summary=_summary(plan), consent=consent or Consent())
    if decision.status == "approval_required":
        return SubmitResult(status="approval_required", decision=decision, plan=plan, next_step=decision.message)
    owner = _hub_owner(plan)  # before anything is written: a token that cannot be read leaves nothing behind
    sweep_id, folder = _reserve_folder(spec.name)
    runs = _propose_runs(plan, configs, sweep_id, folder, owner)
    _record(folder, sweep_id, source, built, runs, approved=decision.status == "approved")
    job = start_controller(sweep_id) if start else None
    return SubmitResult(status="submitted", sweep_id=sweep_id, decision=decision, plan=plan, controller_job=job,
                        next_step=f"follow it with sweep_status(sweep_id='{sweep_id}') (`tunepack sweep status "
                                  f"{sweep_id}`); when it is done, sweep_select picks the best run")


def start_controller(sweep_id: str) -> JobInfo:
    """The controller as a local job (slot: none — it only watches the training jobs)."""
    folder = sweep_dir(sweep_id)
    spec = JobSpec(module=CONTROLLER_MODULE, args=[str(folder)], name=f"sweep-{sweep_id}",
                   labels={"sweep": sweep_id, "stage": "sweep", "slot": "none"},
                   env={"TRACKIO_DIR": str(trackio_dir()), "OMP_NUM_THREADS": "1"})
    job = get_backend("local").submit(spec)
    with updating(folder) as state:
        state.controller.job_id = job.id
    return job


def controller_health(state: SweepState) -> dict:
    """alive | finished | crashed | starting, with what the controller job says."""
    ctl = state.controller
    if state.status in ("done", "canary_failed", "canceled"):
        return {"state": "finished", "job_id": ctl.job_id, "detail": state.message or ""}
    if not ctl.job_id:
        age = time.time() - state.created_at
        return {"state": "starting" if age < 60 else "crashed", "job_id": None,
                "detail": "" if age < 60 else "no controller job was recorded; resume the sweep"}
    backend = get_backend("local")
    try:
        info = backend.status(ctl.job_id)
    except Exception as exc:
        return {"state": "crashed", "job_id": ctl.job_id, "detail": f"the controller job is unknown: {exc}"}
    heartbeat_age = round(time.time() - ctl.heartbeat_at, 1) if ctl.heartbeat_at else None
    if not info.done:
        return {"state": "alive", "job_id": ctl.job_id, "heartbeat_age_s": heartbeat_age, "detail": ""}
    tail = " | ".join(line for line in backend.logs(ctl.job_id, tail=4).splitlines() if line.strip())
    detail = f"the controller job ended {info.stage} ({info.message or 'no message'}) while the sweep was " \
             f"{state.status}" + (f": {ctl.last_error}" if ctl.last_error else "") + (f"; log: {tail}" if tail else "")
    return {"state": "crashed", "job_id": ctl.job_id, "heartbeat_age_s": heartbeat_age, "detail": detail[:900]}


def resume_sweep(sweep_id: str) -> SubmitResult:
    """Start the controller again after a crash: it re-attaches to the jobs it knows and carries on."""
    folder = sweep_dir(sweep_id)
    state = read_state(folder)
    health = controller_health(state)
    if health["state"] == "finished":
        raise SweepError(f"Sweep {sweep_id} is already {state.status}.", "read it with sweep_status or sweep_select.")
    if health["state"] in ("alive", "starting"):
        raise SweepError(f"Sweep {sweep_id}'s controller is {health['state']} (job {health['job_id']}).",
                         "follow it with sweep_status; resume only a crashed controller.")
    job = start_controller(sweep_id)
    return SubmitResult(status="resumed", sweep_id=sweep_id, controller_job=job,
                        next_step=f"the controller carries on; follow it with sweep_status(sweep_id='{sweep_id}')")


def cancel_sweep(sweep_id: str) -> SweepState:
    """Stop the controller, cancel the runs' jobs, and record the runs that never ran."""
    folder = sweep_dir(sweep_id)
    state = read_state(folder)
    local = get_backend("local")
    if state.controller.job_id:
        local.cancel(state.controller.job_id)  # first, so it cannot start anything more
    backend = local if state.backend == "local" else get_backend(state.backend)
    ledger = Ledger(state.ledger)
    with updating(folder) as state:
        for run in state.runs:
            if run.status in ACTIVE and run.job_id:
                backend.cancel(run.job_id)
            if run.status not in FINAL:
                run.status, run.failure, run.note = "skipped" if run.status == "pending" else "failed", "canceled", \
                    "the sweep was canceled"
                if run.experiment_id is not None:
                    if ledger.get(run.experiment_id).status == "proposed":
                        ledger.claim("sweep-cancel", run.experiment_id)
                    ledger.record(run.experiment_id, "crash", note=f"sweep {sweep_id} canceled")
        if state.status not in ("done", "canary_failed"):
            state.status, state.message = "canceled", "canceled by request"
    return state
