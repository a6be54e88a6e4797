"""The jobs interface: one small surface that the local runner and HF Jobs both implement.

A job runs one rendered script (or a tunepack module that drives one). ``submit`` returns at once
with a JobInfo; ``status``, ``logs``, ``list``, ``cancel`` and ``wait`` follow it. Job stages are
the ones HF Jobs uses (SCHEDULING, RUNNING, COMPLETED, ERROR, CANCELED), so the pipeline, the CLI
and the MCP tools never care where a job runs.
"""

from __future__ import annotations

import abc
import builtins
import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from ..errors import JobError, TunepackError
from .cache import Mount
from .markers import parse

Stage = Literal["SCHEDULING", "RUNNING", "COMPLETED", "ERROR", "CANCELED", "DELETED"]
FINAL_STAGES: frozenset[str] = frozenset({"COMPLETED", "ERROR", "CANCELED", "DELETED"})


class JobSpec(BaseModel):
    """What to run. Secrets are given by name only: their values never enter a spec or a log."""

    script: str | None = Field(None, description="Path of a rendered script to run with Python.")
    module: str | None = Field(None, description="A tunepack module to run with `python -m` (local backend).")
    args: list[str] = Field(default_factory=list, description="Arguments passed to the script or module.")
    name: str = Field("job", description="A short human name (the run name).")
    labels: dict[str, str] = Field(default_factory=dict,
                                   description="Labels to find the job by (project, run, stage, config_hash, sweep).")
    env: dict[str, str] = Field(default_factory=dict, description="Non-secret environment variables.")
    secrets: list[str] = Field(default_factory=list, description="Names of secrets the job needs (e.g. HF_TOKEN).")
    timeout_s: int | None = Field(None, ge=1, description="Kill the job after this many seconds.")
    flavor: str | None = Field(None, description="Hardware flavor (see the hardware list).")
    replicas: int = Field(1, ge=1, description="Number of machines (cost is charged per replica).")
    volumes: list[Mount] = Field(default_factory=list,
                                 description="Repos (read-only, at a commit) and buckets mounted into an HF job.")

    @model_validator(mode="after")
    def _one_entry_point(self) -> "JobSpec":
        if bool(self.script) == bool(self.module):
            raise ValueError("give exactly one of script (a file) or module (python -m)")
        return self


class JobInfo(BaseModel):
    id: str
    backend: str
    name: str
    stage: Stage
    message: str | None = Field(None, description="Why the job is in this stage (timeouts, lost processes).")
    labels: dict[str, str] = Field(default_factory=dict)
    created_at: float
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    flavor: str | None = None
    log_path: str | None = Field(None, description="Local log file (local backend).")
    url: str | None = Field(None, description="Web page of the job (remote backends).")
    workdir: str | None = Field(None, description="Working folder of the job (local backend).")

    @property
    def done(self) -> bool:
        return self.stage in FINAL_STAGES

    @property
    def runtime_s(self) -> float:
        if not self.started_at:
            return 0.0
        return (self.ended_at or time.time()) - self.started_at


class Hardware(BaseModel):
    name: str
    description: str
    price_per_hour_usd: float
    accelerator: str | None = None
    compute_capability: float | None = None  # CUDA compute capability of the GPU (bf16 needs 8.0 or more)


class JobBackend(abc.ABC):
    """Implemented by ``local`` (subprocess); ``hf`` (HF Jobs) follows the same interface."""

    name: str

    @abc.abstractmethod
    def submit(self, spec: JobSpec) -> JobInfo: ...

    @abc.abstractmethod
    def status(self, job_id: str) -> JobInfo: ...

    @abc.abstractmethod
    def logs(self, job_id: str, tail: int | None = None) -> str: ...

    @abc.abstractmethod
    def list(self, labels: dict[str, str] | None = None, stage: str | None = None) -> builtins.list[JobInfo]: ...

    @abc.abstractmethod
    def cancel(self, job_id: str) -> JobInfo: ...

    @abc.abstractmethod
    def hardware(self) -> builtins.list[Hardware]: ...

    def wait(self, job_id: str, timeout_s: float | None = None, poll_s: float = 0.5,
             on_line: Callable[[str], None] | None = None) -> JobInfo:
        """Block until the job ends or ``timeout_s`` passes; feed new log lines to ``on_line``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        seen = 0
        while True:
            info = self.status(job_id)
            if on_line is not None:
                lines = self.logs(job_id).splitlines()
                for line in lines[seen:]:
                    on_line(line)
                seen = len(lines)
            if info.done or (deadline is not None and time.monotonic() >= deadline):
                return info
            time.sleep(poll_s)


def progress_of(found: dict[str, list[dict]]) -> dict | None:
    """The last training metric of a parsed log (``markers.parse``): step, max_steps, loss."""
    metrics = [m for m in found.get("METRIC", []) if "step" in m]
    return metrics[-1] if metrics else None


def failure_error(info: JobInfo, log_text: str, found: dict[str, list[dict]] | None = None) -> TunepackError:
    """Turn a failed job into the error an agent can act on: the script's own TUNEPACK_ERROR if it
    printed one, else the log's last lines. ``found``: the log's markers when already parsed."""
    from ..errors import ConfigError, DataError

    errors = (found if found is not None else parse(log_text)).get("ERROR", [])
    where = f" (job {info.id}; full log: {info.log_path or info.url})"
    if info.stage == "CANCELED":  # whatever the script said as it was stopped, nothing failed
        return JobError(f"Job {info.id} was cancelled before it finished{where}.", failure_fix(info))
    if errors:
        last = errors[-1]
        cls = {"data": DataError, "config": ConfigError}.get(last.get("kind", ""), JobError)
        return cls(last.get("problem", "The training script failed.") + where, last.get("fix"))
    tail = "\n".join(log_text.strip().splitlines()[-15:])
    reason = f" ({info.message})" if info.message and info.message != f"exit code {info.exit_code}" else ""
    return JobError(
        f"Job {info.id} ended {info.stage}{reason}, exit code {info.exit_code}. Last log lines:\n{tail}\n{where.strip()}",
        failure_fix(info))


def failure_fix(info: JobInfo) -> str:
    """What to do about a job that failed without saying why, for its kind: cancelled, out of time, an eval, a
    preflight, a training run (a sweep's runs are training runs)."""
    kind = info.labels.get("stage", "")
    if info.stage == "CANCELED":
        return ("it was cancelled (jobs_cancel, a person, or its sweep stopping it): nothing to fix; submit it "
                "again when it is wanted.")
    if "timeout" in (info.message or ""):
        if kind == "eval":
            return ("it ran out of time: its finished tasks are kept (eval_results with this job id); start the "
                    "missing ones again with a smaller eval.limit or a longer timeout_s.")
        return ("it ran out of time: give it a longer timeout (job.timeout_s / --timeout) or less work "
                "(training.max_steps); a run that pushed checkpoints resumes from the last one.")
    if kind == "eval":
        return ("read the log lines above: a model that does not load names its folder, a sandbox that cannot start "
                "names eval.sandbox; fix that and start the eval again.")
    if kind == "preflight":
        return "read the log lines above; fix the config or data they name and run pipeline_preflight again."
    return ("read the traceback above; fix the config or data it names and run again. If it is out of memory, lower "
            "training.per_device_train_batch_size and raise gradient_accumulation_steps.")
