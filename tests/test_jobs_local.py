"""The local job backend with real subprocesses."""

import os
import time

import pytest

from mcp_server.errors import ConfigError, DataError, JobError
from mcp_server.jobs import JobSpec, failure_error, get_backend
from mcp_server.jobs.markers import parse
from mcp_server.jobs.local import LocalBackend


@pytest.fixture
def backend(tmp_path):
    return LocalBackend(root=tmp_path / "jobs")


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body)
    return str(path)


def test_submit_wait_logs_and_list(tmp_path, backend):
    s = script(tmp_path, "ok.py", "import sys\nfor i in range(3): print('line', i, sys.argv[1:], flush=True)\n")
    job = backend.submit(JobSpec(script=s, args=["--x", "1"], name="ok", labels={"project": "p", "run": "r1"}))
    assert job.stage in ("SCHEDULING", "RUNNING", "COMPLETED")
    seen = []
    info = backend.wait(job.id, timeout_s=60, on_line=seen.append)
    assert info.stage == "COMPLETED" and info.exit_code == 0 and info.ended_at >= info.started_at
    assert seen == [f"line {i} ['--x', '1']" for i in range(3)]
    assert backend.logs(job.id, tail=1) == "line 2 ['--x', '1']"
    other = backend.submit(JobSpec(script=s, labels={"project": "p", "run": "r2"}))
    backend.wait(other.id, timeout_s=60)
    assert [j.id for j in backend.list(labels={"run": "r1"})] == [job.id]
    assert {j.id for j in backend.list(labels={"project": "p"})} == {job.id, other.id}
    assert backend.list(stage="ERROR") == []


def test_state_survives_a_new_backend_object(tmp_path, backend):
    s = script(tmp_path, "ok.py", "print('hi')\n")
    job = backend.submit(JobSpec(script=s))
    backend.wait(job.id, timeout_s=60)
    again = LocalBackend(root=tmp_path / "jobs")
    assert again.status(job.id).stage == "COMPLETED" and "hi" in again.logs(job.id)


def test_failure_exit_code(tmp_path, backend):
    job = backend.submit(JobSpec(script=script(tmp_path, "bad.py", "raise SystemExit(4)\n")))
    info = backend.wait(job.id, timeout_s=60)
    assert info.stage == "ERROR" and info.exit_code == 4 and info.message == "exit code 4"


def test_cancel_stops_the_script(tmp_path, backend):
    marker = tmp_path / "still-running"
    body = f"import time, pathlib\nprint('start', flush=True)\ntime.sleep(30)\npathlib.Path({str(marker)!r}).touch()\n"
    job = backend.submit(JobSpec(script=script(tmp_path, "slow.py", body)))
    deadline = time.time() + 30
    while "start" not in backend.logs(job.id) and time.time() < deadline:
        time.sleep(0.1)
    assert backend.cancel(job.id).stage == "CANCELED"
    assert not marker.exists()


def test_timeout_kills_the_job(tmp_path, backend):
    job = backend.submit(JobSpec(script=script(tmp_path, "slow.py", "import time\ntime.sleep(30)\n"), timeout_s=1))
    info = backend.wait(job.id, timeout_s=60)
    assert info.stage == "ERROR" and "timeout of 1 s" in info.message and "timeout of 1 s" in backend.logs(job.id)


def test_secrets_by_name_never_written(tmp_path, backend, monkeypatch):
    monkeypatch.setenv("TUNEPACK_TEST_SECRET", "s3cret-value")
    s = script(tmp_path, "env.py", "import os\nprint(len(os.environ['TUNEPACK_TEST_SECRET']))\n")
    job = backend.submit(JobSpec(script=s, secrets=["TUNEPACK_TEST_SECRET"]))
    backend.wait(job.id, timeout_s=60)
    assert backend.logs(job.id).strip() == "12"
    for path in (tmp_path / "jobs").rglob("*"):
        if path.is_file() and path.suffix != ".db":
            assert "s3cret-value" not in path.read_text(errors="replace")
    monkeypatch.delenv("TUNEPACK_TEST_SECRET")
    with pytest.raises(JobError, match="TUNEPACK_TEST_SECRET"):
        backend.submit(JobSpec(script=s, secrets=["TUNEPACK_TEST_SECRET"]))


def test_unknown_job_and_missing_script(tmp_path, backend):
    with pytest.raises(JobError, match="no local job 'nope'"):
        backend.status("nope")
    with pytest.raises(JobError, match="does not exist"):
        backend.submit(JobSpec(script=str(tmp_path / "missing.py")))
    with pytest.raises(JobError, match="Unknown job backend"):
        get_backend("moon")


def test_hardware_is_free_and_local(backend):
    (hw,) = backend.hardware()
    assert hw.name == "local" and hw.price_per_hour_usd == 0 and str(os.cpu_count()) in hw.description


def test_markers_and_failure_errors(tmp_path, backend):
    body = ("import json\nprint('TUNEPACK_METRIC ' + json.dumps({'step': 1}))\n"
            "print('TUNEPACK_ERROR ' + json.dumps({'kind': 'data', 'problem': 'P.', 'fix': 'F.'}))\nraise SystemExit(3)\n")
    job = backend.submit(JobSpec(script=script(tmp_path, "err.py", body)))
    info = backend.wait(job.id, timeout_s=60)
    log = backend.logs(job.id)
    assert parse(log).get("METRIC", []) == [{"step": 1}]
    err = failure_error(info, log)
    assert isinstance(err, DataError) and err.problem.startswith("P.") and err.fix == "F." and job.id in err.problem
    assert isinstance(failure_error(info, log.replace('"data"', '"config"')), ConfigError)
    crash = failure_error(info, "Traceback...\nRuntimeError: boom\n")
    assert isinstance(crash, JobError) and "RuntimeError: boom" in crash.problem and "exit code 3" in crash.problem


def test_concurrency_limit_queues_jobs_and_splits_threads(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the split applies when the caller sets nothing
    backend = LocalBackend(root=tmp_path / "jobs", max_concurrent=2)
    body = "import os, time\nprint(os.environ['OMP_NUM_THREADS'], flush=True)\ntime.sleep(2)\n"
    s = script(tmp_path, "slow.py", body)
    jobs = [backend.submit(JobSpec(script=s)) for _ in range(3)]
    deadline = time.time() + 30
    while time.time() < deadline:
        stages = [backend.status(j.id).stage for j in jobs]
        if stages.count("RUNNING") == 2:
            break
        time.sleep(0.1)
    assert sorted(stages) == ["RUNNING", "RUNNING", "SCHEDULING"]
    infos = [backend.wait(j.id, timeout_s=60) for j in jobs]
    assert all(i.stage == "COMPLETED" for i in infos)
    threads = [int(backend.logs(j.id).split()[0]) for j in jobs]
    assert max(threads) <= max(1, (os.cpu_count() or 1)) and min(threads) >= 1
    if (os.cpu_count() or 1) >= 2:
        # the second of the first two to take the runner's lock sees the first one running (which one varies)
        assert min(threads) == (os.cpu_count() or 1) // 2


def test_the_callers_thread_count_wins_over_the_split(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # e.g. a test worker's share, or a user who knows the machine is busy
    backend = LocalBackend(root=tmp_path / "jobs", max_concurrent=2)
    s = script(tmp_path, "threads.py", "import os\nprint(os.environ['OMP_NUM_THREADS'], flush=True)\n")
    job = backend.submit(JobSpec(script=s))
    assert backend.wait(job.id, timeout_s=60).stage == "COMPLETED"
    assert backend.logs(job.id).split()[0] == "3"


def test_a_killed_runner_is_reported_not_running_forever(tmp_path):
    import signal

    backend = LocalBackend(root=tmp_path / "jobs")
    job = backend.submit(JobSpec(script=script(tmp_path, "slow.py", "import time\ntime.sleep(30)\n")))
    deadline = time.time() + 30
    while not backend.store.get(job.id)["child_pid"] and time.time() < deadline:  # RUNNING is set just before
        time.sleep(0.1)
    row = backend.store.get(job.id)
    os.killpg(row["child_pid"], signal.SIGKILL)
    os.kill(row["runner_pid"], signal.SIGKILL)
    time.sleep(0.5)
    info = backend.status(job.id)
    assert info.stage == "ERROR" and "disappeared" in info.message


def test_a_job_whose_runner_never_started_ends_in_error(tmp_path, backend):
    """The submitting process killed between recording the job and starting its runner: not SCHEDULING forever."""
    backend.store.insert(id="local-orphan", name="orphan", stage="SCHEDULING", labels={}, command=["true"], env={},
                         timeout_s=None, flavor="local", created_at=time.time() - 120, workdir=str(tmp_path),
                         log_path=str(tmp_path / "output.log"), spec={})
    info = backend.status("local-orphan")
    assert info.stage == "ERROR" and "never started" in info.message
    backend.store.insert(id="local-fresh", name="fresh", stage="SCHEDULING", labels={}, command=["true"], env={},
                         timeout_s=None, flavor="local", created_at=time.time(), workdir=str(tmp_path),
                         log_path=str(tmp_path / "output.log"), spec={})
    assert backend.status("local-fresh").stage == "SCHEDULING"  # a submit in progress is left alone


def test_a_runner_caught_inside_its_execve_is_alive_and_a_zombie_is_not(monkeypatch):
    """/proc/PID/cmdline reads empty both for a zombie and, for a moment, for a process in the middle of its execve
    (LocalBackend.submit reads the status right after starting the runner: under load that moment was reported as a
    runner that disappeared). The process state tells them apart."""
    import subprocess
    from pathlib import Path

    from mcp_server.jobs.local_runner import pid_alive

    child = subprocess.Popen(["true"])
    deadline = time.time() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z" and time.time() < deadline:
        time.sleep(0.05)
    assert not pid_alive(child.pid, "local-x")  # exited, not yet reaped
    child.wait()
    cmdline = Path(f"/proc/{os.getpid()}/cmdline")
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: b"" if p == cmdline else real(p))
    assert pid_alive(os.getpid(), "local-x")  # running, its argv not readable yet
