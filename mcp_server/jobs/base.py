"""The jobs interface: one small surface that the local runner and HF Jobs both implement.

A job runs one rendered script. ``submit`` returns at once with a JobInfo; ``status``, ``logs``,
``list``, ``cancel`` and ``wait`` follow it. Backends return the same pydantic models, so the
pipeline, the CLI and the MCP tools never care where a job runs.
"""

from __future__ import annotations

import abc
import json
import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from ..errors import JobError, TunepackError

JobState = Literal["queued", "running", "succeeded", "failed", "cancelled", "timeout", "lost"]
FINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled", "timeout", "lost"})
MARKER_PREFIX = "TUNEPACK_"


class JobSpec(BaseModel):
    """What to run. Secrets are given by name only: their values never enter a spec or a log."""

    script: str = Field(description="Path of the rendered script to run.")
    args: list[str] = Field(default_factory=list, description="Arguments passed to the script.")
    name: str = Field("job", description="A short human name (the run name).")
    labels: dict[str, str] = Field(default_factory=dict, description="Labels to find the job by (project, run, sweep, config hash).")
    env: dict[str, str] = Field(default_factory=dict, description="Non-secret environment variables.")
    secrets: list[str] = Field(default_factory=list, description="Names of secrets the job needs (e.g. HF_TOKEN).")
    timeout_s: int | None = Field(None, ge=1, description="Kill the job after this many seconds.")
    flavor: str | None = Field(None, description="Hardware flavor (remote backends).")


class JobInfo(BaseModel):
    id: str
    backend: str
    name: str
    state: JobState
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
        return self.state in FINAL_STATES


class Hardware(BaseModel):
    name: str
    description: str
    price_per_hour_usd: float
    accelerator: str | None = None


class JobBackend(abc.ABC):
    """Implemented by ``local`` (subprocess) and ``hf`` (HF Jobs)."""

    name: str

    @abc.abstractmethod
    def submit(self, spec: JobSpec) -> JobInfo: ...

    @abc.abstractmethod
    def status(self, job_id: str) -> JobInfo: ...

    @abc.abstractmethod
    def logs(self, job_id: str, tail: int | None = None) -> str: ...

    @abc.abstractmethod
    def list(self, labels: dict[str, str] | None = None, state: str | None = None) -> list[JobInfo]: ...

    @abc.abstractmethod
    def cancel(self, job_id: str) -> JobInfo: ...

    @abc.abstractmethod
    def hardware(self) -> list[Hardware]: ...

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


def parse_markers(log_text: str, kind: str) -> list[dict]:
    """The JSON payloads of ``TUNEPACK_<KIND> {json}`` lines in a job log."""
    prefix = f"{MARKER_PREFIX}{kind} "
    found = []
    for line in log_text.splitlines():
        line = line.strip()
        if line.startswith(prefix):
            try:
                found.append(json.loads(line[len(prefix):]))
            except ValueError:
                continue
    return found


def failure_error(info: JobInfo, log_text: str) -> TunepackError:
    """Turn a failed job into the error an agent can act on: the script's own TUNEPACK_ERROR if it
    printed one, else the log's last lines."""
    from ..errors import ConfigError, DataError

    errors = parse_markers(log_text, "ERROR")
    where = f" (job {info.id}; full log: {info.log_path or info.url})"
    if errors:
        last = errors[-1]
        cls = {"data": DataError, "config": ConfigError}.get(last.get("kind"), JobError)
        return cls(last.get("problem", "The training script failed.") + where, last.get("fix"))
    tail = "\n".join(log_text.strip().splitlines()[-15:])
    return JobError(
        f"Job {info.id} ended {info.state} (exit code {info.exit_code}). Last log lines:\n{tail}\n{where.strip()}",
        "read the traceback above; fix the config or data it names and run again. "
        "If it is out of memory, lower training.per_device_train_batch_size and raise "
        "gradient_accumulation_steps.",
    )
