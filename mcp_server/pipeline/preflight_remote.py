"""Preflight's HF half: the token's permissions, the job as the Hub would take it, the job's environment resolved
before spending, and the real config's first steps as an HF job (the mask check on cpu-basic, or GRPO's RL check
on the run's GPU) with the verdict read back from its log."""

from __future__ import annotations

from ..approval import Consent, Decision
from ..config import TrainConfig
from ..errors import TunepackError
from ..home import home_dir
from ..jobs import JobInfo, JobSpec, estimate
from ..methods import write_script
from ..methods.grpo.check import RL_CHECK_TIMEOUT_S
from ..train.render import config_hash, run_name_for
from .preflight_report import RETRY, PreflightReport, fail_check
from .records import Check


def remote_checks(cfg: TrainConfig, backend: str) -> list[Check]:
    """Token valid; can write the output repo's namespace; can run jobs in the job namespace."""
    from ..hf_auth import permissions

    try:
        who = permissions()
    except TunepackError as exc:
        return [Check(name="hf_token", status="fail", detail=exc.problem, fix=exc.fix)]
    out = [Check(name="hf_token", status="pass", detail=f"token of '{who.user}' (role {who.role})")]
    target = cfg.output.hub_repo_id or f"{who.user}/{cfg.registry_name}"
    owner = target.split("/")[0]
    out.append(Check(name="hub_write", status="pass" if owner in who.can_write else "fail",
                     detail=f"{'can' if owner in who.can_write else 'cannot'} write repos in '{owner}' ({target})",
                     fix=None if owner in who.can_write else
                     f"use a token with write access to '{owner}', or set output.hub_repo_id in a namespace "
                     f"the token can write ({', '.join(who.can_write) or 'none'})"))
    if backend != "local":
        ok = who.user in who.can_run_jobs
        out.append(Check(name="jobs_namespace", status="pass" if ok else "fail",
                         detail=f"{'can' if ok else 'cannot'} submit jobs in '{who.user}'",
                         fix=None if ok else f"use a token with job.write on '{who.user}'"))
    return out


def job_spec_check(cfg: TrainConfig, flavor: str | None, timeout: int | None) -> Check:
    """The job as huggingface_hub and the Hub would take it (jobs/hf_rules.py): flavor in the live hardware list,
    the timeout's format, the names of the run (a job name) and of the secrets."""
    from ..jobs import available_hardware
    from ..jobs.hf_rules import check_job

    flavor = flavor or cfg.job.flavor or "cpu-basic"
    try:
        seconds = check_job(flavor, timeout or 1800, {"project": cfg.tracking.project}, ["HF_TOKEN"], [],
                            [h.name for h in available_hardware("hf")], name=run_name_for(cfg))
    except TunepackError as exc:
        return fail_check("hf_job_spec", exc)
    return Check(name="hf_job_spec", status="pass",
                 detail=f"flavor {flavor} is in the hardware list; timeout {seconds} s; names as HF Jobs reads them")


def job_env_check(cfg: TrainConfig, checks: list[Check]) -> dict | None:
    """The run script's header resolved as its HF job's `uv run` will (jobs/resolve.py), vLLM inside the range the
    pinned TRL supports; and the header of the eval job that follows when eval.tasks are set: the versions each
    gets, or the reason it would fail installing them, before the GPU is billed."""
    from ..evals.render import eval_pins
    from ..jobs.resolve import header_dependencies, resolve
    from ..methods import render_script
    from ..methods.grpo import VLLM_FOR_TRL

    try:
        text = render_script(cfg, run_name=f"preflight-{run_name_for(cfg)}")
    except TunepackError as exc:
        checks.append(fail_check("job_env", exc))
        return None
    vllm_range = VLLM_FOR_TRL.removeprefix("vllm")
    env = resolve(header_dependencies(text), within={"vllm": vllm_range})
    found = env.model_dump()
    labelled = [("job_env", env)]
    if cfg.eval.tasks:
        evaluation = resolve(eval_pins(cfg.eval.backend), within={"vllm": vllm_range})
        found["eval"] = evaluation.model_dump()
        labelled.append(("job_env_eval", evaluation))
    for name, got in labelled:
        status = {True: "pass", False: "fail", None: "skipped"}[got.ok]
        checks.append(Check(name=name, status=status, detail=(("eval job: " if name != "job_env" else "")
                                                              + (got.line() if got.ok else str(got.problem))),
                            fix=got.fix))
    return found


REMOTE_CHECK_FLAVOR = "cpu-basic"  # the cheapest machine: the mask check needs the tokenizer, not a GPU
REMOTE_CHECK_TIMEOUT_S = 1800


def start_remote_check(cfg: TrainConfig, checks: list[Check], flavor: str | None = None,
                        consent: Consent | None = None, rl: bool = False) -> tuple[JobInfo | None, Decision | None]:
    """The real config's first steps as an HF job: it proves the job starts, its pinned packages install, the data
    repo and the tokenizer load at their pinned commits and the masks verify there — what the paid run will meet
    first. Default: the mask check on cpu-basic (cents, charged to the budget). ``rl`` (GRPO, `tunepack rl-check`):
    the RL check (``--rl-check``: the ceiling in the job's sandbox and the starting model's groups, which need
    the real model on its GPU) on the run's own flavor, quoted and approved like any paid job. Returns (the job,
    or the decision still waiting for a human's yes)."""
    from ..approval import spend
    from ..jobs import get_backend
    from .remote import prepare_remote

    where = (flavor or cfg.job.flavor or "a10g-small") if rl else REMOTE_CHECK_FLAVOR
    timeout = RL_CHECK_TIMEOUT_S if rl else REMOTE_CHECK_TIMEOUT_S
    name = "remote_rl_check" if rl else "remote_mask_check"
    run_name = f"{'rlcheck' if rl else 'preflight'}-{run_name_for(cfg)}"
    run_dir = home_dir("runs", run_name)
    cost = estimate("hf", where, timeout)

    def submit() -> JobInfo:
        plan = prepare_remote(cfg)
        script = write_script(plan.config, run_dir / "remote_check.py", run_name=run_name,
                              mounts=plan.cache.paths(), cache_bucket=plan.cache.bucket)
        return get_backend("hf").submit(JobSpec(
            script=str(script), args=["--rl-check" if rl else "--check-only"], name=run_name, flavor=where,
            timeout_s=timeout, secrets=["HF_TOKEN"], volumes=plan.cache.mounts, env=plan.cache.env,
            labels={"project": cfg.tracking.project, "run": run_name, "stage": "preflight",
                    "config_hash": config_hash(cfg)}))

    action = "rl_check" if rl else "pipeline_preflight"
    try:
        outcome = spend(action, {"config_hash": config_hash(cfg), "flavor": where, "timeout_s": timeout}, cost,
                        cfg.tracking.project, submit, consent or Consent())
    except TunepackError as exc:
        if rl:
            raise
        checks.append(fail_check(name, exc))
        return None, None
    job = outcome.job
    if job is None:  # a paid flavor waits for a human's yes
        checks.append(Check(name=name, status="pending", detail=outcome.decision.message,
                            fix="show the quote to the human; run the command again with --yes once they agree"))
        return None, outcome.decision
    what = ("the ceiling in the job's sandbox and the starting model's groups (its TUNEPACK_RLCHECK line)" if rl
            else "the mask check (its TUNEPACK_MASK line)")
    checks.append(Check(name=name, status="pending",
                        detail=f"HF job {job.id} on {where} (worst case ${cost.worst_case_usd:.3f}): the real "
                               f"tokenizer and the data at their pinned commits, {what}"))
    return job, None


def settle_remote_check(report: PreflightReport, info: JobInfo, log_text: str) -> PreflightReport:
    """The report once its HF mask-check job has ended: ``remote_mask_check`` pass (its TUNEPACK_MASK line, with
    what it checked) or fail (the job's own error), ``ok`` and the next step following; a job still running
    leaves it pending."""
    from ..jobs import failure_error, markers

    if not info.done:
        return report
    found = markers.parse(log_text).get("MASK", [])
    if info.stage == "COMPLETED" and found:
        mask = found[-1]
        check = Check(name="remote_mask_check", status="pass", detail=f"HF job {info.id}: the real tokenizer and "
                      f"the data at their pinned commits; {mask.get('rows_checked', '?')} rows mask-checked, "
                      f"{mask.get('rows_dropped', 0)} dropped")
    else:
        err = failure_error(info, log_text)
        check = Check(name="remote_mask_check", status="fail", detail=f"HF job {info.id}: {err.problem}", fix=err.fix)
    checks = [check if c.name == "remote_mask_check" else c for c in report.checks]
    ok = report.ok and check.status == "pass"
    return report.model_copy(update={"checks": checks, "ok": ok, "remote_job": info,
                                     "next_step": report.next_step if ok else RETRY})
