"""A sweep's folder and its state file, under ``<tunepack home>/sweeps/<sweep id>/``.

- ``plan.json``   the plan as submitted (runs, diffs, costs) and each run's full config;
- ``state.json``  written by the controller on every poll (and by ``select``): the sweep's status, the
                  controller's heartbeat, and one entry per run (job, step, losses, metric, cost);
- ``controller.lock`` held by the one live controller; ``report.md`` and ``curves.png`` at the end.

Writes replace the file atomically under a file lock, so a reader never sees half a state and a crash
of the controller leaves the last good state behind (``status`` then says the controller is gone).
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Literal

from filelock import FileLock
from pydantic import BaseModel, Field

from ..errors import SweepNotFound
from ..home import home_dir

RunStatus = Literal["pending", "submitted", "running", "completed", "failed", "stopped", "skipped"]
SweepStatus = Literal["starting", "running", "done", "canary_failed", "canceled"]
ACTIVE = ("submitted", "running")
FINAL = ("completed", "failed", "stopped", "skipped")
MAX_CURVE = 400


FailureKind = Literal["script", "infra", "submit", "diverged", "budget", "canary", "canceled"]


class RunState(BaseModel):
    id: str
    changes: dict[str, Any]
    run_name: str
    config_hash: str
    experiment_id: int | None = None
    canary: bool = False
    status: RunStatus = "pending"
    job_id: str | None = None
    jobs: list[str] = Field(default_factory=list, description="Every attempt's job id, oldest first.")
    attempts: int = 0
    submitted_at: float | None = None
    ended_at: float | None = None
    step: int | None = None
    max_steps: int | None = None
    first_loss: float | None = None
    last_loss: float | None = None
    metric_value: float | None = None
    curve: list[dict] = Field(default_factory=list, description="step, loss and the selection metric per log.")
    cost_usd: float = Field(0.0, description="What the run cost so far (price × runtime, all attempts).")
    earlier_attempts_usd: float = 0.0
    worst_case_usd: float = 0.0
    result: dict | None = Field(None, description="The registered adapter: registry name/version, path or Hub repo.")
    eval: dict | None = None
    failure: FailureKind | None = None
    error: str | None = None
    note: str | None = None


class ControllerState(BaseModel):
    job_id: str | None = None
    pid: int | None = None
    started_at: float | None = None
    heartbeat_at: float | None = None
    starts: int = 0
    last_error: str | None = None


class SweepState(BaseModel):
    id: str
    name: str
    status: SweepStatus = "starting"
    created_at: float
    updated_at: float
    backend: str
    flavor: str | None
    project: str
    ledger: str
    metric: dict
    max_concurrent: int
    canary: dict | None = Field(None, description="run, steps, passed, passed_at, failed")
    early_stop: dict
    retries: int
    budget_cap_usd: float | None = None
    approved_usd: float = 0.0
    controller: ControllerState = Field(default_factory=ControllerState)
    alerts: list[dict] = Field(default_factory=list)
    runs: list[RunState]
    selection: dict | None = None
    report: dict | None = None
    message: str | None = None

    def run(self, run_id: str) -> RunState:
        for run in self.runs:
            if run.id == run_id:
                return run
        raise SweepNotFound(f"Sweep {self.id} has no run '{run_id}'.",
                            f"use one of: {', '.join(r.id for r in self.runs)}.")


def sweeps_root() -> Path:
    return home_dir("sweeps")


def new_sweep_id(name: str) -> str:
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def sweep_dir(sweep_id: str) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", sweep_id or ""):
        raise SweepNotFound(f"'{sweep_id}' is not a sweep id.", "use an id from `tunepack sweep list` (sweep_status).")
    folder = sweeps_root() / sweep_id
    if not (folder / "state.json").is_file():
        known = ", ".join(list_sweeps()[:10]) or "none"
        raise SweepNotFound(f"There is no sweep '{sweep_id}' (recent: {known}).",
                            "use the sweep id sweep_submit returned (`tunepack sweep list`).")
    return folder


def list_sweeps() -> list[str]:
    root = sweeps_root()
    found = [p for p in root.iterdir() if (p / "state.json").is_file()]
    return [p.name for p in sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)]


def _write_json(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, default=str)
    os.replace(tmp, path)


def _lock(folder: Path) -> FileLock:
    return FileLock(str(folder / ".state.lock"), timeout=60)


def read_state(folder: str | Path) -> SweepState:
    folder = Path(folder)
    return SweepState.model_validate_json((folder / "state.json").read_text(encoding="utf-8"))


def write_state(folder: str | Path, state: SweepState, keep: tuple[str, ...] = ("selection",)) -> None:
    """Write the controller's copy; fields in ``keep`` that another writer set meanwhile survive."""
    folder = Path(folder)
    with _lock(folder):
        path = folder / "state.json"
        if keep and path.is_file():
            disk = read_state(folder)
            for name in keep:
                if getattr(disk, name) is not None:
                    setattr(state, name, getattr(disk, name))
        state.updated_at = time.time()
        _write_json(path, state.model_dump(mode="json"))


@contextmanager
def updating(folder: str | Path) -> Iterator[SweepState]:
    """Read, change and write the state under the lock (for writers other than the controller's loop)."""
    folder = Path(folder)
    with _lock(folder):
        state = read_state(folder)
        yield state
        state.updated_at = time.time()
        _write_json(folder / "state.json", state.model_dump(mode="json"))


def write_json(path: str | Path, data: Any) -> None:
    _write_json(Path(path), data)


def read_plan(folder: str | Path) -> dict:
    return json.loads((Path(folder) / "plan.json").read_text(encoding="utf-8"))


def trim_curve(curve: list[dict]) -> list[dict]:
    """At most MAX_CURVE points: the latest half as logged, the earlier part thinned evenly."""
    if len(curve) <= MAX_CURVE:
        return curve
    half = MAX_CURVE // 2
    head, tail = curve[:-half], curve[-half:]
    return head[::math.ceil(len(head) / half)] + tail


Mutator = Callable[[SweepState], None]
