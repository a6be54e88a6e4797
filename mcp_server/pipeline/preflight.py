"""Preflight: be sure before spending money.

Checks what can be checked at once (config, data shape, model reference, cost and time for the
chosen flavor, remote permissions), then starts one local job that runs the real config's mask
check (``--check-only``, with the real tokenizer) and a smoke run of a few steps with the tiny
model on the same data. The tool returns the checks and the job id; the job's
``TUNEPACK_PREFLIGHT`` line carries the rest. The HF half (permissions, the job spec, the job's environment, the
mask check as an HF job) is preflight_remote.py; the report's shape is preflight_report.py.
"""

from __future__ import annotations

from pathlib import Path

from ..approval import Consent
from ..approval.custodian import active as custodian_active
from ..config import TrainConfig, load_config
from ..config.agent_code import CUSTODIAN_FIX, agent_code_paths
from ..errors import ConfigError, TunepackError
from ..home import home_dir, trackio_dir
from ..jobs import CostEstimate, JobInfo, JobSpec, estimate, get_backend
from ..methods import method_of, write_script
from ..methods.grpo.check import RL_CHECK_TIMEOUT_S
from ..traces.spine import training_config
from ..train.render import config_hash, run_name_for
from ..train.tiny_model import tiny_model_path
from .placement import placement
from .preflight_remote import job_env_check, job_spec_check, remote_checks, start_remote_check
from .preflight_report import RETRY, PreflightReport, fail_check
from .records import Check, PreflightPlan, SmokePlan
from .run import check_rows

SMOKE_STEPS = 3


def smoke_family(cfg: TrainConfig) -> str:
    """The replica of the model's family (Gemma 4's multimodal wrapper, Llama 3.x, else Qwen3) for the smoke run."""
    from ..train.families import template_for_model

    stock, _ = template_for_model(cfg.model.name, cfg.model.revision)
    return "gemma4" if (stock or "").startswith("gemma4") else "llama3" if (stock or "").startswith("llama3_") else "qwen3"


def smoke_config(cfg: TrainConfig) -> TrainConfig:
    """The same data through the tiny replica of the model's family for a few steps: the training path
    (architecture class, chat template, LoRA targets), not the model's weights; the method says how its smoke run
    differs (``Method.smoke``: GRPO keeps its method, distillation smokes the student's SFT path)."""
    own = method_of(cfg).smoke(cfg)
    data = cfg.data.model_copy(update={"eval_fraction": None, "eval_sessions": None, "eval_split": None,
                                      "allow_truncation": True})
    training = cfg.training.model_copy(update={
        "max_steps": SMOKE_STEPS, "logging_steps": 1, "eval_steps": None, "save_steps": None,
        "gradient_checkpointing": False, **own["training"]})  # max_length as configured: the turns it keeps
    grpo_section = own["grpo"]
    return cfg.model_copy(update={
        "model": cfg.model.model_copy(update={"name": f"tiny:{smoke_family(cfg)}", "revision": None, "adapter": None}),
        "grpo": grpo_section,
        "chat_template": "model", "quantization": "none", "data": data, "training": training, "teacher": None,
        "distill": type(cfg.distill)(),
        "tracking": cfg.tracking.model_copy(update={"space_id": None}),  # the run's own project, group "smoke"
        "output": cfg.output.model_copy(update={"adapter_dir": None, "hub_repo_id": None})})


def _model_check(cfg: TrainConfig) -> Check:
    if cfg.model.is_tiny:
        return Check(name="model", status="pass", detail=f"{cfg.model.name}: built from the data on first use")
    if Path(cfg.model.name).is_dir():
        return Check(name="model", status="pass", detail=f"local model folder {cfg.model.name}")
    return Check(name="model", status="pending",
                 detail=f"Hub id {cfg.model.name}: the mask-check job loads its tokenizer from the Hub")


def _load_checked(config_path: str | Path, checks: list[Check]) -> TrainConfig | None:
    """The config with its data converted and pre-checked; None (and a failed check) when either fails."""
    try:
        cfg = load_config(config_path)
    except TunepackError as exc:
        checks.append(fail_check("config", exc))
        return None
    checks.append(Check(name="config", status="pass", detail=f"valid; run name base '{cfg.run_name}'"))
    try:
        cfg = training_config(cfg)  # data.format traces: every check below sees the converted chat rows
        rows = check_rows(cfg)
    except TunepackError as exc:
        checks.append(fail_check("data", exc))
        return None
    checks.append(Check(name="data", status="pass" if rows else "pending",
                        detail=method_of(cfg).rows_line(rows) if rows else
                        f"Hub dataset {cfg.data.hub_id}: read and checked inside the job"))
    checks.append(_model_check(cfg))
    return cfg


def heldout_check(cfg: TrainConfig, checks: list[Check]) -> dict | None:
    """The held-out sessions, before any training: which, how many turns, how many call a tool. A next-action
    eval over held-out sessions without one tool-call turn fails here, not after the compute is spent."""
    from ..evals.kit.heldout import HeldoutError, split
    from ..evals.kit.nextaction import TASK, heldout_summary, heldout_summary_line
    from ..train.data import read_local_rows

    data = cfg.data
    if not data.held_out or not data.path or method_of(cfg).rl:
        return None
    rows = [row for path in data.path for row in read_local_rows(path)]
    try:
        _, _, record = split(rows, data.eval_fraction, data.eval_seed, data.messages_column, names=data.eval_sessions)
    except HeldoutError as exc:
        checks.append(Check(name="heldout", status="fail", detail=exc.problem, fix=exc.fix))
        return None
    summary = heldout_summary(rows, record)
    scored = TASK in cfg.eval.tasks
    if scored and not summary["call_turns"]:
        start_turns = _start_heldout(cfg.model.adapter)[0] if cfg.model.adapter else None
        lineage = (f"; or drop data.eval_fraction / data.eval_sessions: a run from {cfg.model.adapter} holding none "
                   f"out is scored on the {start_turns} turns its lineage held out") if start_turns else ""
        checks.append(Check(name="heldout", status="fail", detail=heldout_summary_line(summary) + (
            ": next-action would score no call"), fix="hold out more sessions (a larger data.eval_fraction, another "
            "data.eval_seed) or name sessions that call tools in data.eval_sessions" + lineage))
    elif (data.eval_fraction and not summary["named"] and summary.get("of_turns")
          and summary["turns"] > max(0.5, 2 * data.eval_fraction) * summary["of_turns"]):
        share = summary["turns"] / summary["of_turns"]  # a few long sessions: the draw took most of the data
        checks.append(Check(name="heldout", status="fail", detail=heldout_summary_line(summary) + (
            f": {share:.0%} of the model turns held out (data.eval_fraction {data.eval_fraction}), "
            f"leaving {summary['of_turns'] - summary['turns']} to train on"),
            fix="name smaller sessions in data.eval_sessions, or try another data.eval_seed"))
    else:
        checks.append(Check(name="heldout", status="pass", detail=heldout_summary_line(summary)))
    return summary


def eval_time_check(cfg: TrainConfig, flavor: str | None, timeout_s: int | None, heldout: dict | None,
                    checks: list[Check], remote: bool = False) -> dict | None:
    """Each eval task's expected time on the run's machine (every answer at max_tokens), and a failed check when
    that alone passes the job's timeout (the eval runs in the training job, after training). After an HF
    training job the eval is a job of its own (eval_start): said here, before anything is spent."""
    from ..evals.estimate import against_timeout, eval_times, times_line

    if not cfg.eval.tasks:
        return None
    tiny = cfg.model.is_tiny
    turns, sessions = (heldout or {}).get("turns"), (heldout or {}).get("sessions")
    if turns is None and cfg.model.adapter and "next-action" in cfg.eval.tasks:
        turns, sessions = _start_heldout(cfg.model.adapter)  # a run from an adapter: its lineage's held-out turns
    times = eval_times(cfg.eval, flavor=flavor, tiny=tiny, nextaction_turns=turns, heldout_sessions=sessions,
                       models=3 if cfg.model.adapter else 2)
    timeout = timeout_s or cfg.job.timeout_s
    total, warning = against_timeout(times, timeout, flavor, tiny)
    line = times_line(times, total)
    if remote:  # not inside the training job: its own job, quoted when it starts
        warning = None
        line = ("an HF training job trains and pushes; eval.tasks then run as their own job (eval_start with "
                "backend hf, quoted then; the settled run's outcome names the call): " + line)
    checks.append(Check(name="eval_time", status="fail" if warning else "pass",
                        detail=line + (f"; {warning[0]}" if warning else ""), fix=warning[1] if warning else None))
    return {"tasks": [t.model_dump() for t in times], "expected_s": round(total, 1), "timeout_s": timeout,
            "warning": f"{warning[0]}: {warning[1]}" if warning else None}


def _start_heldout(ref: str) -> tuple[int | None, int | None]:
    from ..evals.service import heldout_turns
    from ..registry import LocalRegistry, read_manifest
    from ..train.start import parse_ref

    try:
        name, version = parse_ref(ref)
        return heldout_turns(read_manifest(LocalRegistry().get(name, version).path))
    except TunepackError:
        return None, None


def _quote(backend: str, flavor: str | None, timeout_s: int | None, checks: list[Check]) -> CostEstimate | None:
    try:
        cost = estimate(backend, flavor, timeout_s)
    except TunepackError as exc:
        checks.append(fail_check("cost", exc))
        return None
    checks.append(Check(name="cost", status="pass",
                        detail=f"{cost.flavor} at ${cost.price_per_hour_usd:.2f}/h: worst case ${cost.worst_case_usd:.2f}"
                               + (" (needs human approval)" if cost.needs_approval else "")))
    return cost


def _start_smoke(cfg: TrainConfig, checks: list[Check]) -> JobInfo:
    """Render the mask check (and, for local data, the smoke run on the family's replica) and start them as
    one local job."""
    run_name = f"preflight-{run_name_for(cfg)}"
    run_dir = home_dir("runs", run_name)
    check_script = write_script(cfg, run_dir / "check.py", run_name=run_name,
                                model_path=str(tiny_model_path(cfg)) if cfg.model.is_tiny else None)
    method = method_of(cfg)
    plan = PreflightPlan(check_script=str(check_script), config=cfg, check_args=list(method.check_args))
    if cfg.data.path:
        small = smoke_config(cfg)
        smoke_script = write_script(small, run_dir / "smoke.py", run_name=f"smoke-{run_name}",
                                    model_path=str(tiny_model_path(small)), group="smoke")
        plan.smoke = SmokePlan(script=str(smoke_script), config=small, output_dir=str(run_dir / "smoke-adapter"))
    else:
        checks.append(Check(name="smoke", status="skipped",
                            detail="the tiny smoke model builds its tokenizer from local files; this config reads Hub data"))
    plan.write(run_dir)
    job = get_backend("local").submit(JobSpec(
        module="mcp_server.pipeline.preflight_job", args=[str(run_dir)], name=run_name, env={"TRACKIO_DIR": str(trackio_dir())},
        labels={"project": cfg.tracking.project, "run": run_name, "stage": "preflight", "config_hash": config_hash(cfg)}))
    checks.append(Check(name="mask_and_smoke", status="pending",
                        detail=f"job {job.id}: {method.check_label}, then {SMOKE_STEPS} smoke steps"))
    return job


def rl_check(config_path: str | Path, *, flavor: str | None = None, consent: Consent | None = None) -> PreflightReport:
    """GRPO's RL check with the real model on its HF Jobs GPU (`tunepack rl-check`): the same script as the run with
    ``--rl-check`` on the run's flavor — the ceiling, the sizing, the starting model's groups — quoted, and only
    with a human's yes (the command at a terminal, or --yes)."""
    checks: list[Check] = []
    cfg = _load_checked(config_path, checks)
    if cfg is None:
        return PreflightReport(ok=False, checks=checks, next_step=RETRY)
    method = method_of(cfg)
    if not method.rl:
        raise ConfigError(f"rl-check is GRPO's check, and {config_path} trains with {cfg.training.method}.",
                          "run `tunepack preflight CONFIG` for SFT and distillation.")
    grpo = method.preflight(cfg, "hf", flavor, checks)
    if any(c.status == "fail" for c in checks):
        return PreflightReport(ok=False, checks=checks, grpo=grpo, next_step=RETRY)
    job, waiting = start_remote_check(cfg, checks, flavor, consent, rl=True)
    if waiting is not None:
        return PreflightReport(ok=False, checks=checks, grpo=grpo, approval=waiting.model_dump(mode="json"),
                               next_step=waiting.message)
    assert job is not None
    return PreflightReport(ok=True, checks=checks, grpo=grpo, remote_job=job,
                           next_step=f"follow HF job {job.id} (tunepack jobs wait {job.id} --backend hf): COMPLETED "
                                     "with a TUNEPACK_RLCHECK line is a pass; its TUNEPACK_ERROR says what to fix")


def preflight(config_path: str | Path, *, backend: str | None = None, flavor: str | None = None,
              timeout_s: int | None = None, smoke: bool = True) -> PreflightReport:
    """Be sure before spending: config, data, model reference, the cost quote and (for remote runs or Hub
    outputs) the token's permissions; then the mask-check + smoke job. GRPO: the RL plan and ceiling here, the
    starting model's groups in the job (locally with the real model; for HF Jobs `tunepack rl-check` runs them
    on the run's GPU, a paid job of its own)."""
    checks: list[Check] = []
    cfg = _load_checked(config_path, checks)
    backend, flavor, timeout_s = placement(cfg, backend, flavor, timeout_s)  # the call's, else the config's job
    cost = _quote(backend, flavor, timeout_s, checks) if cfg else None
    if cfg is None or cost is None:
        return PreflightReport(ok=False, checks=checks, next_step=RETRY)
    code = agent_code_paths(cfg) if custodian_active() else []
    if code:  # the ceiling check, the mask check and the smoke job would run the agent's code here
        checks.append(Check(name="custodian", status="fail", detail=(
            "custodian mode runs no code an agent can influence under the custodian's account, and this config's "
            "checks would: " + "; ".join(code) + f". Fix: {CUSTODIAN_FIX}")))
        return PreflightReport(ok=False, checks=checks, next_step=RETRY)
    method = method_of(cfg)
    own = method.preflight(cfg, backend, flavor, checks)  # distillation's plan, GRPO's RL preflight
    heldout = heldout_check(cfg, checks)
    done = {"cost": cost, "heldout": heldout, "memory": method.memory(cfg, backend, flavor, checks),
            "eval_time": eval_time_check(cfg, cost.flavor if backend != "local" else "local", timeout_s, heldout,
                                         checks, remote=backend != "local"),
            **({method.report_key: own} if method.report_key else {})}
    if any(c.status == "fail" for c in checks):
        return PreflightReport(ok=False, checks=checks, next_step=RETRY, **done)
    if backend != "local" or cfg.output.hub_repo_id or cfg.tracking.space_id:
        checks.extend(remote_checks(cfg, backend))
        if backend == "hf":
            checks.append(job_spec_check(cfg, flavor, timeout_s or cfg.job.timeout_s))
            done["job_env"] = job_env_check(cfg, checks)
        if any(c.status == "fail" for c in checks):
            return PreflightReport(ok=False, checks=checks, next_step=RETRY, **done)
    if not smoke:
        return PreflightReport(ok=True, checks=checks, next_step="run the pipeline (pipeline_run)", **done)
    remote = start_remote_check(cfg, checks)[0] if backend == "hf" else None
    if backend == "hf" and remote is None:
        return PreflightReport(ok=False, checks=checks, next_step=RETRY, **done)
    job = _start_smoke(cfg, checks)
    wait = (f"the checks here passed; job {job.id} decides the rest ({method.check_label}, then smoke steps): "
            f"jobs_wait('{job.id}') until it ends; spend nothing before it COMPLETED (its TUNEPACK_PREFLIGHT line "
            "says pass or fail)")
    if remote is not None:
        wait += f"; and for HF job {remote.id} (jobs_wait backend hf): COMPLETED with a TUNEPACK_MASK line is a pass"
    if method.rl and backend == "hf":
        rl_cost = estimate("hf", flavor or cfg.job.flavor or "a10g-small", RL_CHECK_TIMEOUT_S)
        checks.append(Check(name="remote_rl_check", status="pending", detail=(
            f"the starting model's groups need the real model on {rl_cost.flavor}: `tunepack rl-check CONFIG "
            f"--flavor {rl_cost.flavor}` runs them there (at most {RL_CHECK_TIMEOUT_S // 60} min, worst case "
            f"${rl_cost.worst_case_usd:.2f}, a human's yes); otherwise the run checks them first and stops before "
            "training (grpo.signal_check)")))
        wait += "; then `tunepack rl-check CONFIG` for the starting model's groups on the GPU (paid: a human's yes)"
    return PreflightReport(ok=True, checks=checks, smoke_job=job, remote_job=remote, next_step=wait, **done)
