"""The process that babysits one local job (started detached by LocalBackend.submit).

It runs the job's command with stdout+stderr appended to the job log, enforces the timeout,
forwards SIGTERM (cancel) to the whole process group, and writes ``result.json`` last, so a job's
state survives the tunepack process that submitted it.

Usage: python -m mcp_server.jobs.local_runner JOB_DIR
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _write_result(job_dir: Path, **result: object) -> None:
    tmp = job_dir / "result.json.tmp"
    tmp.write_text(json.dumps(result))
    os.replace(tmp, job_dir / "result.json")


def run(job_dir: Path) -> int:
    job = json.loads((job_dir / "job.json").read_text())
    env = dict(os.environ, **job["env"], PYTHONUNBUFFERED="1")
    cancelled = {"flag": False}
    started = time.time()
    with open(job_dir / "output.log", "ab", buffering=0) as log:
        child = subprocess.Popen(job["command"], cwd=job_dir, env=env, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        (job_dir / "started").write_text(json.dumps({"started_at": started, "child_pid": child.pid}))

        def stop(signum, frame):  # cancel: stop the script's whole process group
            cancelled["flag"] = True
            try:
                os.killpg(child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

        signal.signal(signal.SIGTERM, stop)
        try:
            code = child.wait(timeout=job.get("timeout_s"))
            state = "cancelled" if cancelled["flag"] else ("succeeded" if code == 0 else "failed")
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            code = child.wait()
            state = "timeout"
            log.write(f"\n[tunepack] job killed after its timeout of {job['timeout_s']} s\n".encode())
    _write_result(job_dir, exit_code=code, state=state, started_at=started, ended_at=time.time())
    return 0


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1])))
