"""The spine: config → data pre-check → rendered script → job → Trackio → registry + model card.

Every later capability drives this path. It holds no training logic of its own: it calls the
rooms (config, train, jobs, tracking, registry) through their interfaces, and fails early with one
clear error before anything is spent or written.

``start_pipeline`` returns as soon as the job is submitted (what an MCP tool needs); the job
itself (``pipeline.job``) trains, then registers the adapter and writes the card, so a run
finishes properly even when nobody is waiting for it. ``run_pipeline`` = start + wait (the CLI).
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, Field

from ..approval import Consent, Spend, spend
from ..approval.custodian import refuse_agent_code
from ..config import TrainConfig, load_config
from ..config.agent_code import CUSTODIAN_FIX, agent_code_paths
from ..errors import DataError, JobError
from ..home import home_dir, trackio_dir
from ..jobs import JobBackend, JobInfo, JobSpec, estimate, failure_error, get_backend, markers
from ..methods import method_of, write_script
from ..traces.spine import training_config, training_config_or_pending
from ..train.data import read_local_rows
from ..train.render import config_hash, run_name_for
from ..train.tiny_model import tiny_model_path
from .placement import placement
from .records import RunRecord


class RunResult(BaseModel):
    run_name: str
    job_id: str
    log_path: str | None
    script_path: str
    registry_name: str
    registry_version: int
    adapter_path: str
    card_path: str
    trackio_project: str
    trackio_run: str
    trackio_dir: str
    steps: int
    first_loss: float | None
    last_loss: float | None
    used_4bit: bool
    mask_check: dict
    wall_time_s: float
    eval: dict | None = None  # the eval summary (table, scores) when the config has eval.tasks


class StartedRun(BaseModel):
    spend: Spend = Field(description="the gate's decision, the quote, the job (None while approval is required) "
                                     "and the budget after the charge")
    run_name: str | None = None
    run_dir: str | None = None
    script_path: str | None = None

    @property
    def job(self) -> JobInfo | None:
        return self.spend.job


# --- data pre-check (light: json + DuckDB, no torch) ----------------------------------------------

def precheck_data(cfg: TrainConfig) -> int:
    """Fail before any job starts on empty data or rows with no assistant turn. Returns the row count. Raw agent
    sessions (data.format: traces) are checked as the rows they become."""
    return check_rows(training_config(cfg))


def check_rows(cfg: TrainConfig) -> int:
    """``precheck_data`` of a config whose sessions are already converted (``training_config``)."""
    if not cfg.data.path:
        return 0  # Hub data: the script checks it where it is loaded
    rows = [row for path in cfg.data.path for row in read_local_rows(path)]
    if not rows:
        raise DataError(f"The dataset {', '.join(cfg.data.path)} has no rows.",
                        "add training rows (one JSON object per line) or point data.path at the right file.")
    method_of(cfg).check_rows(cfg, rows)  # chat rows need an assistant turn; GRPO's prompt rows their own checks
    return len(rows)


# --- start, finish, run ---------------------------------------------------------------------------

def data_size(cfg: TrainConfig) -> tuple[int, float]:
    """Rows and a rough mean tokens per row (bytes / 4) of local data, for time estimates. Sessions on a Hub that
    cannot be reached now count as unknown rows of windows that fill max_length."""
    cfg, pending = training_config_or_pending(cfg)
    if pending:  # windows of long sessions fill each run's max_length (estimates take min(avg, max_length))
        return 0, float("inf")
    rows = check_rows(cfg)
    size = sum(Path(p).stat().st_size for p in cfg.data.path)
    return rows, (size / rows / 4 if rows else 512.0)


def remote_timeout(cfg: TrainConfig, flavor: str | None, timeout_s: int | None, force: bool = False,
                   size: tuple[int, float] | None = None) -> int:
    """The checked timeout of a remote training job (refuses < 30 min unless forced; suggests one).
    ``size``: the data's (rows, mean tokens) when already measured."""
    from .remote import check_timeout, suggest_timeout_s

    rows, avg = size or data_size(cfg)
    return check_timeout(timeout_s, suggest_timeout_s(cfg, rows, avg, flavor), force)


def start_pipeline(config: str | Path | TrainConfig, *, backend: JobBackend | str | None = None,
                   timeout_s: int | None = None, flavor: str | None = None,
                   extra_labels: dict[str, str] | None = None, force: bool = False,
                   consent: Consent | None = None) -> StartedRun:
    """Validate, pre-check the data, quote, pass the spending gate, then render and submit the pipeline job;
    return at once. ``consent``: how the human agreed (none by default: a paid flavor returns a quote with an
    approval token and nothing is written). An approval binds to the config's content, not to its path.
    ``backend``: a backend, or its name (then it is only opened to submit, after the gate)."""
    cfg = load_config(config) if not isinstance(config, TrainConfig) else config
    name, flavor, timeout_s = placement(cfg, backend if isinstance(backend, str) else backend.name if backend else None,
                                        flavor, timeout_s)
    if name == "local":
        refuse_agent_code("this local run", agent_code_paths(cfg), CUSTODIAN_FIX)
    size = data_size(cfg)  # the data is read and checked once per start
    plan = method_of(cfg).plan(cfg, name, flavor)  # distillation: mode, tokenizers, memory; GRPO: the GPU plan
    memory = method_of(cfg).memory(cfg, name, flavor)  # SFT, GRPO: the memory plan, kept in the manifest and card
    if name != "local":
        from .remote import check_remote

        check_remote(cfg)
        timeout_s = remote_timeout(cfg, flavor, timeout_s, force, size)
    # the approval binds to everything that changes what runs or how it is recorded: the labels too (they name the
    # run's stage, project and run in the job list, and settling reads them)
    arguments = {"config_hash": config_hash(cfg), "backend": name, "flavor": flavor, "timeout_s": timeout_s,
                 "force": force, "labels": dict(extra_labels or {})}
    submitted: list[_Submitted] = []

    def submit() -> JobInfo:
        opened = get_backend(name) if backend is None or isinstance(backend, str) else backend
        submitted.append(_submit(cfg, opened, timeout_s=timeout_s, flavor=flavor, extra_labels=extra_labels,
                                 method_plan=plan, memory=memory))
        return submitted[0].job

    outcome = spend("pipeline_run", arguments, estimate(name, flavor, timeout_s), cfg.tracking.project,
                    submit, consent or Consent())
    where = {k: v for k, v in submitted[0]._asdict().items() if k != "job"} if submitted else {}
    return StartedRun(spend=outcome, **where)


class _Submitted(NamedTuple):
    run_name: str
    run_dir: str
    script_path: str
    job: JobInfo


def _submit(cfg: TrainConfig, backend: JobBackend, *, timeout_s: int | None, flavor: str | None,
            extra_labels: dict[str, str] | None, method_plan: dict | None = None,
            memory: dict | None = None) -> _Submitted:
    """Render into a fresh run folder and submit (the gate has passed)."""
    run_name, run_dir = _claim_run_dir(cfg)
    cfg = training_config(cfg, run_dir / "data")  # data.format traces: sessions → chat rows in the run folder
    labels = {"project": cfg.tracking.project, "run": run_name, "config_hash": config_hash(cfg), "stage": "train",
              **(extra_labels or {})}
    if backend.name != "local":
        from .remote import prepare_remote

        plan = prepare_remote(cfg)
        script = write_script(plan.config, run_dir / "train.py", run_name=run_name, push=plan.push,
                              mounts=plan.cache.paths(), cache_bucket=plan.cache.bucket, plan=method_plan,
                              memory=memory)
        secrets = ["HF_TOKEN", *(["TRACKIO_WRITE_TOKEN"] if cfg.tracking.server_url else [])]
        spec = JobSpec(script=str(script), name=run_name, timeout_s=timeout_s, flavor=flavor, secrets=secrets,
                       labels={**labels, "output_repo": plan.push["repo_id"]}, volumes=plan.cache.mounts,
                       env=plan.cache.env)
        return _Submitted(run_name, str(run_dir), str(script), backend.submit(spec))
    model_path = str(tiny_model_path(cfg)) if cfg.model.is_tiny else None
    adapter_dir = cfg.output.adapter_dir
    default_output = not adapter_dir
    output_dir = Path(adapter_dir) if adapter_dir else run_dir / "adapter"
    if default_output:
        shutil.rmtree(output_dir, ignore_errors=True)  # a reused run name starts from a clean folder
    script = write_script(cfg, run_dir / "train.py", model_path=model_path, run_name=run_name, plan=method_plan,
                          memory=memory)
    tdir = trackio_dir()
    RunRecord(config=cfg, run_name=run_name, script=str(script), output_dir=str(output_dir),
              default_output=default_output, registry_name=cfg.registry_name, trackio_dir=str(tdir),
              tiny_model=model_path).write(run_dir)
    spec = JobSpec(module="mcp_server.pipeline.job", args=[str(run_dir)], name=run_name, timeout_s=timeout_s,
                   flavor=flavor, env={"TRACKIO_DIR": str(tdir)}, labels=labels)
    return _Submitted(run_name, str(run_dir), str(script), backend.submit(spec))


def _claim_run_dir(cfg: TrainConfig) -> tuple[str, Path]:
    """The run's name and its fresh folder. A name tunepack made (config + timestamp) that another run started in
    the same second already holds gets -2, -3, ...: two runs never share a folder, a log or a Trackio run. A
    tracking.run_name the user set is kept as it is (a rerun of it starts from a clean adapter folder)."""
    name = run_name_for(cfg)
    if cfg.tracking.run_name:
        return name, home_dir("runs", name)
    root = home_dir("runs")
    for n in range(1, 1000):
        candidate = name if n == 1 else f"{name}-{n}"
        try:
            (root / candidate).mkdir()
        except FileExistsError:
            continue
        return candidate, root / candidate
    raise JobError(f"999 runs named {name} already exist in {root}.", "set tracking.run_name, or clear old runs.")


def result_of(info: JobInfo, log_text: str) -> RunResult:
    """The RunResult of a finished pipeline job, or the job's own error."""
    found = markers.parse(log_text)
    if info.stage != "COMPLETED":
        raise failure_error(info, log_text, found)
    registered = found.get("REGISTERED", [])
    if not registered:
        raise JobError(f"Job {info.id} completed without registering an adapter (no TUNEPACK_REGISTERED line).",
                       "read its log (jobs_logs) — it was probably not a pipeline job.")
    payload = registered[-1]
    evaluated = found.get("EVALUATED", [])
    wall = (info.ended_at or time.time()) - info.created_at
    return RunResult(job_id=info.id, log_path=info.log_path, wall_time_s=round(wall, 1),
                     eval=evaluated[-1] if evaluated else None, **payload)


def run_pipeline(config: str | Path | TrainConfig, *, backend: JobBackend | None = None,
                 on_line: Callable[[str], None] | None = None, timeout_s: int | None = None) -> RunResult:
    """Start the pipeline job (a person asked for it: their command is the approval) and block until it has
    trained and registered the adapter."""
    backend = backend or get_backend("local")
    started = start_pipeline(config, backend=backend, timeout_s=timeout_s, consent=Consent.keyboard())
    if started.job is None:  # only a paid flavor asks, and a person at the keyboard is the approval
        raise JobError(started.spend.decision.message, "approve the quote, then run again.")
    try:
        info = backend.wait(started.job.id, on_line=on_line)
    except KeyboardInterrupt:
        backend.cancel(started.job.id)
        raise KeyboardInterrupt(f"job {started.job.id} was cancelled") from None
    return result_of(info, backend.logs(started.job.id))


def submit_script(spec: JobSpec, backend: str, *, project: str = "tunepack", consent: Consent | None = None) -> Spend:
    """Any rendered script as a job on the named backend, through the same spending gate as a pipeline run (an
    approval binds to the script's content, its arguments and the placement)."""
    cost = estimate(backend, spec.flavor, spec.timeout_s)  # an unknown backend or flavor is named first
    path = Path(spec.script or "")
    if not path.is_file():
        raise JobError(f"The script '{spec.script}' does not exist.",
                       "render one first (pipeline_render / tunepack render) and pass its path.")
    if backend == "local":
        refuse_agent_code("a local job of a script", [f"{path} is a script the agent gave, run as a local job"],
                          "submit it with backend 'hf' (HF's machine, with the custodian's approval), run the pipeline "
                          "from a config (pipeline_run renders its own script), or run the script under the agent's "
                          "own account.")
    spec = spec.model_copy(update={"name": spec.name if spec.name != "job" else path.stem})
    arguments = {"script_sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "backend": backend,
                 **spec.model_dump(include={"name", "args", "labels", "secrets", "timeout_s", "flavor"})}
    return spend("jobs_submit", arguments, cost, project, lambda: get_backend(backend).submit(spec),
                 consent or Consent())
