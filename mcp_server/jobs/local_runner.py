"""The process that babysits one local job (started detached by LocalBackend.submit).

It waits for a free slot (the backend's concurrency limit), runs the job's command with
stdout+stderr appended to the job log (the command sees its job id as ``TUNEPACK_JOB_ID``), enforces
the timeout, forwards SIGTERM (cancel) to the script's whole process group, and records RUNNING, the
exit code and the final stage in the job store itself — so a job's true end is known even when no
tunepack process was watching.

Usage: python -m mcp_server.jobs.local_runner STORE_PATH JOB_ID MAX_CONCURRENT
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from .. import settings
from ..errors import JobError
from ..staging import process_alive
from .store import JobStore

SLOTLESS = ("slot", "none")  # label of jobs that only watch others (a sweep controller): they take no slot


def slotless(job: dict) -> bool:
    return job["labels"].get(SLOTLESS[0]) == SLOTLESS[1]


def pid_alive(pid: int | None, job_id: str | None = None) -> bool:
    """True when ``pid`` runs (and, where /proc can tell, is the runner of ``job_id``)."""
    if not pid or not process_alive(pid):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if job_id and cmdline.exists():
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return False
        if not text.strip():  # exited and not yet reaped (a zombie), or still inside its execve: no argv yet
            return not _zombie(pid)
        return job_id in text
    return True


def _zombie(pid: int) -> bool:
    """The process has exited (state Z or X). A runner read right after LocalBackend.submit started it can be in
    the middle of its execve, where /proc/PID/cmdline reads empty for a moment (the new memory is in place, its
    argv not yet): alive, not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


@dataclass
class _Stop:
    """A cancel request (SIGTERM) and the child process it must reach."""

    requested: bool = False
    child: subprocess.Popen | None = None


def run(store_path: str, job_id: str, max_concurrent: int) -> int:
    store = JobStore(store_path)
    job = store.get(job_id)
    if job is None:
        raise JobError(f"There is no local job '{job_id}' in {store_path}.",
                       "start local jobs through LocalBackend.submit, which records the job before its runner.")
    stop = _Stop()

    def on_term(signum, frame):
        stop.requested = True
        child = stop.child
        if child is not None:
            try:
                os.killpg(child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, on_term)
    lock = FileLock(str(Path(store_path).with_name("slots.lock")))
    while True:  # SCHEDULING: wait for a free slot
        if stop.requested:
            store.update(job_id, stage="CANCELED", message="canceled before it started", ended_at=time.time())
            return 0
        with lock:
            busy = [j for j in store.running() if j["id"] != job_id and not slotless(j)
                    and pid_alive(j["runner_pid"], j["id"])]
            if slotless(job) or len(busy) < max_concurrent:
                store.update(job_id, stage="RUNNING", started_at=time.time(), message=None)
                queued = sum(1 for j in store.all() if j["stage"] == "SCHEDULING" and j["id"] != job_id)
                break
        time.sleep(0.5)

    env = settings.environment(**job["env"], PYTHONUNBUFFERED="1", TUNEPACK_JOB_ID=job_id)
    if not env.get("OMP_NUM_THREADS"):  # set by the job or the caller: their choice (see jobs/local.py)
        # split the cores between the jobs that run side by side
        sharing = min(max_concurrent, len(busy) + 1 + queued)
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // sharing))
    started = time.time()
    with open(job["log_path"], "ab", buffering=0) as log:
        child = subprocess.Popen(job["command"], cwd=job["workdir"], env=env, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        stop.child = child
        store.update(job_id, child_pid=child.pid)
        if stop.requested:
            on_term(signal.SIGTERM, None)
        timeout = job["timeout_s"]
        message: str | None
        try:
            code = child.wait(timeout=None if timeout is None else max(0.0, timeout - (time.time() - started)))
            if stop.requested:
                stage, message = "CANCELED", "canceled"
            else:
                stage, message = ("COMPLETED", None) if code == 0 else ("ERROR", _exit_message(code))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            code = child.wait()
            stage, message = "ERROR", f"killed after its timeout of {timeout} s"
            log.write(f"\n[tunepack] job {message}\n".encode())
    store.update(job_id, stage=stage, message=message, exit_code=code, ended_at=time.time())
    return 0


def _exit_message(code: int) -> str:
    """A non-zero end in words: a negative code is the signal that killed the script (-9: SIGKILL, e.g. the
    out-of-memory killer or kill -9)."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exit code {code}"


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2], int(sys.argv[3])))
