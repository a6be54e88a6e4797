"""The local job backend: each job is a detached subprocess with its own folder and log.

State lives on disk under ``<tunepack home>/jobs``: a SQLite table of submitted jobs, and one
folder per job holding ``job.json`` (the command), ``output.log`` and, once it ends,
``result.json``. A job keeps running, and its state stays readable, after the process that
submitted it exits (the MCP server can restart mid-training).
"""

from __future__ import annotations

import json
import os
import secrets as _secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from ..errors import JobError
from ..home import home_dir
from .base import Hardware, JobBackend, JobInfo, JobSpec

SCHEMA = """CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, labels TEXT NOT NULL, created_at REAL NOT NULL,
    workdir TEXT NOT NULL, runner_pid INTEGER, flavor TEXT, spec TEXT NOT NULL)"""


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalBackend(JobBackend):
    """Runs scripts with this machine's Python (``TUNEPACK_PYTHON`` or the current interpreter)."""

    name = "local"

    def __init__(self, root: str | Path | None = None, python: str | None = None):
        self.root = Path(root) if root else home_dir("jobs")
        self.root.mkdir(parents=True, exist_ok=True)
        self.python = python or os.environ.get("TUNEPACK_PYTHON") or sys.executable
        self._children: dict[str, subprocess.Popen] = {}
        with closing(self._db()) as db, db:
            db.execute(SCHEMA)

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.root / "jobs.db", timeout=30)
        db.row_factory = sqlite3.Row
        return db

    def _row(self, job_id: str) -> sqlite3.Row:
        with closing(self._db()) as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobError(f"There is no local job '{job_id}'.", "list jobs with `tunepack jobs list` and use one of their ids.")
        return row

    # --- the interface ---------------------------------------------------------------------

    def submit(self, spec: JobSpec) -> JobInfo:
        script = Path(spec.script)
        if not script.is_file():
            raise JobError(f"Script '{script}' does not exist.", "render one first with `tunepack render CONFIG -o train.py`.")
        missing = [name for name in spec.secrets if not os.environ.get(name)]
        if missing:
            raise JobError(f"The job needs the secret(s) {', '.join(missing)}, which are not set in the environment.",
                           "export them in the shell that starts tunepack (values are never written to job files).")
        job_id = time.strftime("local-%Y%m%d-%H%M%S-") + _secrets.token_hex(3)
        workdir = self.root / job_id
        workdir.mkdir(parents=True)
        shutil.copy2(script, workdir / script.name)
        (workdir / "job.json").write_text(json.dumps({
            "command": [self.python, str(workdir / script.name), *spec.args],
            "env": spec.env, "timeout_s": spec.timeout_s, "secrets": spec.secrets,
        }, indent=2))
        (workdir / "output.log").touch()
        runner = subprocess.Popen(
            [self.python, "-m", "mcp_server.jobs.local_runner", str(workdir)],
            cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=dict(os.environ, PYTHONPATH=_package_root_on_path()),
        )
        self._children[job_id] = runner
        with closing(self._db()) as db, db:
            db.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (job_id, spec.name, json.dumps(spec.labels), time.time(), str(workdir), runner.pid,
                        spec.flavor, spec.model_dump_json()))
        return self.status(job_id)

    def status(self, job_id: str) -> JobInfo:
        row = self._row(job_id)
        workdir = Path(row["workdir"])
        child = self._children.get(job_id)
        if child is not None:
            child.poll()  # reap our own runner so a finished one is not seen as a live zombie
        info = JobInfo(id=job_id, backend=self.name, name=row["name"], state="queued",
                       labels=json.loads(row["labels"]), created_at=row["created_at"], flavor=row["flavor"],
                       log_path=str(workdir / "output.log"), workdir=str(workdir))
        result_file, started_file = workdir / "result.json", workdir / "started"
        if result_file.is_file():
            result = json.loads(result_file.read_text())
            return info.model_copy(update={"state": result["state"], "exit_code": result["exit_code"],
                                           "started_at": result["started_at"], "ended_at": result["ended_at"]})
        runner_alive = _alive(row["runner_pid"]) and (child is None or child.returncode is None)
        if started_file.is_file():
            started = json.loads(started_file.read_text())["started_at"]
            return info.model_copy(update={"state": "running" if runner_alive else "lost", "started_at": started})
        return info if runner_alive else info.model_copy(update={"state": "lost"})

    def logs(self, job_id: str, tail: int | None = None) -> str:
        path = Path(self._row(job_id)["workdir"]) / "output.log"
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        if tail is not None:
            text = "\n".join(text.splitlines()[-tail:])
        return text

    def list(self, labels: dict[str, str] | None = None, state: str | None = None) -> list[JobInfo]:
        with closing(self._db()) as db:
            ids = [r["id"] for r in db.execute("SELECT id, labels FROM jobs ORDER BY created_at DESC")
                   if all(json.loads(r["labels"]).get(k) == v for k, v in (labels or {}).items())]
        infos = [self.status(i) for i in ids]
        return [i for i in infos if state is None or i.state == state]

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
            time.sleep(0.2)
            info = self.status(job_id)
        return info

    def hardware(self) -> list[Hardware]:
        return [Hardware(name="local", description=f"this machine: {os.cpu_count()} CPU cores "
                         "(a CUDA GPU is used when the script finds one)", price_per_hour_usd=0.0)]


def _package_root_on_path() -> str:
    """PYTHONPATH that lets the runner import mcp_server even from a plain clone."""
    root = str(Path(__file__).resolve().parents[2])
    current = os.environ.get("PYTHONPATH")
    return f"{root}{os.pathsep}{current}" if current else root
