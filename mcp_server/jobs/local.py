"""The local job backend: each job is a detached runner process with its own folder and log.

State lives under ``<tunepack home>/jobs``: the SQLite job store (``jobs.db``) and one folder per
job holding its copy of the script and ``output.log``. The runner (``local_runner``) records the
stages itself, so jobs keep running, and their true end is recorded, while no tunepack process
watches them (the MCP server can restart mid-training). At most ``max_concurrent`` jobs run at
once (``TUNEPACK_LOCAL_MAX_JOBS``, default 2); the rest wait in SCHEDULING (a job labelled
``slot: none`` — a sweep controller, which only watches other jobs — takes no slot). A job that starts
beside others gets its share of the cores as torch threads (one each on two cores) unless its env
or the caller's environment sets ``OMP_NUM_THREADS``; a job alone gets them all. The caller's setting wins
because the runner cannot see other load: two torch threads on two cores that something else keeps busy
spin on each other (a 20-step tiny run measured 18 s alone, 271 s beside two busy processes, 22 s there
with one thread).
"""

from __future__ import annotations

import builtins
import os
import secrets as _secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .. import settings
from ..errors import JobError, disk_guard
from ..home import home_dir
from .base import Hardware, JobBackend, JobInfo, JobSpec
from .local_runner import pid_alive
from .store import JobStore

LOCAL_FLAVORS = (None, "local", "cpu")


class LocalBackend(JobBackend):
    """Runs jobs with this machine's Python (``TUNEPACK_PYTHON`` or the current interpreter)."""

    name = "local"

    def __init__(self, root: str | Path | None = None, python: str | None = None, max_concurrent: int | None = None):
        self.root = Path(root) if root else home_dir("jobs")
        self.root.mkdir(parents=True, exist_ok=True)
        self.python = python or settings.job_python() or sys.executable
        self.max_concurrent = max_concurrent or settings.local_max_jobs()
        self.store = JobStore(self.root / "jobs.db")
        self._children: dict[str, subprocess.Popen] = {}

    def _row(self, job_id: str) -> dict:
        row = self.store.get(job_id)
        if row is None:
            raise JobError(f"There is no local job '{job_id}'.",
                           "list jobs (tool jobs_list, or `tunepack jobs list`) and use one of their ids.")
        return row

    def _info(self, row: dict) -> JobInfo:
        return JobInfo(id=row["id"], backend=self.name, name=row["name"], stage=row["stage"], message=row["message"],
                       labels=row["labels"], created_at=row["created_at"], started_at=row["started_at"],
                       ended_at=row["ended_at"], exit_code=row["exit_code"], flavor=row["flavor"] or "local",
                       log_path=row["log_path"], workdir=row["workdir"])

    # --- the interface ---------------------------------------------------------------------

    def submit(self, spec: JobSpec) -> JobInfo:
        if spec.flavor not in LOCAL_FLAVORS:
            raise JobError(f"The local backend runs on this machine; '{spec.flavor}' is not a local flavor.",
                           "leave flavor empty (or 'local') for local jobs, or choose the hf backend for GPU flavors.")
        if spec.volumes:
            raise JobError("Volumes are mounted into HF jobs only; a local job reads this machine's files and caches.",
                           "drop volumes from the spec, or submit with backend 'hf'.")
        missing = [name for name in spec.secrets if not settings.secret(name)]
        if missing:
            raise JobError(f"The job needs the secret(s) {', '.join(missing)}, which are not set in the environment.",
                           "export them in the shell that starts tunepack (values are never written to job files).")
        job_id = time.strftime("local-%Y%m%d-%H%M%S-") + _secrets.token_hex(3)
        workdir = self.root / job_id
        try:  # a job is in the store whole (folder, script, log, row) or not at all
            with disk_guard(f"Submitting the local job '{spec.name}'", self.root):
                command, log_path = self._stage(spec, workdir)
                env = {"PYTHONPATH": _package_root_on_path(), **spec.env}
                self.store.insert(id=job_id, name=spec.name, stage="SCHEDULING", labels=spec.labels, command=command,
                                  env=env, timeout_s=spec.timeout_s, flavor=spec.flavor or "local",
                                  created_at=time.time(), workdir=str(workdir), log_path=str(log_path),
                                  spec=spec.model_dump(mode="json"))
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        runner = subprocess.Popen(
            [self.python, "-m", "mcp_server.jobs.local_runner", str(self.store.path), job_id, str(self.max_concurrent)],
            cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=settings.environment(PYTHONPATH=_package_root_on_path()),
        )
        self._children[job_id] = runner
        self.store.update(job_id, runner_pid=runner.pid)
        return self.status(job_id)

    def _stage(self, spec: JobSpec, workdir: Path) -> tuple[list[str], Path]:
        """The job's folder with its copy of the script and an empty log; returns the command and the log path."""
        workdir.mkdir(parents=True)
        if spec.script:
            script = Path(spec.script)
            if not script.is_file():
                raise JobError(f"Script '{script}' does not exist.",
                               "render one first (tool pipeline_render, or `tunepack render CONFIG -o train.py`).")
            shutil.copy2(script, workdir / script.name)
            command = [self.python, str(workdir / script.name), *spec.args]
        else:
            assert spec.module, "JobSpec's validator requires a script or a module"
            command = [self.python, "-m", spec.module, *spec.args]
        log_path = workdir / "output.log"
        log_path.touch()
        return command, log_path

    def status(self, job_id: str) -> JobInfo:
        row = self._row(job_id)
        child = self._children.get(job_id)
        if child is not None:
            child.poll()  # reap our own runner so a finished one is not mistaken for a live process
        if row["stage"] == "SCHEDULING" and not row["runner_pid"] and time.time() - row["created_at"] > ORPHAN_AFTER_S:
            self.store.update(job_id, only_if_stage=("SCHEDULING",), stage="ERROR", ended_at=time.time(),
                              message="the job never started: the process that submitted it stopped before "
                                      "starting its runner; submit it again")
            row = self._row(job_id)
        if row["stage"] in ("SCHEDULING", "RUNNING") and row["runner_pid"] and not pid_alive(row["runner_pid"], job_id):
            row = self._row(job_id)  # it may have written its end just now
            if row["stage"] in ("SCHEDULING", "RUNNING"):
                self.store.update(job_id, only_if_stage=("SCHEDULING", "RUNNING"), stage="ERROR", ended_at=time.time(),
                                  message="the job's runner process disappeared (killed or machine restarted); "
                                          "its exit code is unknown")
                row = self._row(job_id)
        return self._info(row)

    def logs(self, job_id: str, tail: int | None = None) -> str:
        path = Path(self._row(job_id)["log_path"])
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        if tail is not None:
            text = "\n".join(text.splitlines()[-tail:])
        return text

    def list(self, labels: dict[str, str] | None = None, stage: str | None = None) -> builtins.list[JobInfo]:
        rows = [r for r in self.store.all() if all(r["labels"].get(k) == v for k, v in (labels or {}).items())]
        infos = [self.status(r["id"]) if r["stage"] in ("SCHEDULING", "RUNNING") else self._info(r) for r in rows]
        return [i for i in infos if stage is None or i.stage == stage]

    def cancel(self, job_id: str) -> JobInfo:
        info = self.status(job_id)
        if info.done:
            return info
        try:
            os.kill(self._row(job_id)["runner_pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not info.done:
            time.sleep(0.1)
            info = self.status(job_id)
        return info

    def hardware(self) -> builtins.list[Hardware]:
        return [Hardware(name="local", description=f"this machine: {os.cpu_count()} CPU cores, up to "
                         f"{self.max_concurrent} jobs at once (a CUDA GPU is used when the script finds one)",
                         price_per_hour_usd=0.0)]


ORPHAN_AFTER_S = 60  # a submit starts the runner right after recording the job; a minute later it never will


def _package_root_on_path() -> str:
    """PYTHONPATH that lets job processes import mcp_server even from a plain clone."""
    root = str(Path(__file__).resolve().parents[2])
    current = settings.pythonpath()
    return f"{root}{os.pathsep}{current}" if current else root
