
from mcp_server.jobs import JobSpec
from mcp_server.jobs.local import LocalBackend
from mcp_server.jobs.views import describe, read_logs

BODY = """import json, sys
for step in (1, 2, 3):
    print('TUNEPACK_METRIC ' + json.dumps({'step': step, 'max_steps': 3, 'loss': 4.0 - step}))
print('TUNEPACK_METRIC ' + json.dumps({'step': 3, 'max_steps': 3, 'eval_loss': 1.5}))
for i in range(300):
    print('filler', i)
print('TUNEPACK_DONE ' + json.dumps({'steps': 3}))
"""


def test_describe_reads_progress_and_outcome(tmp_path):
    backend = LocalBackend(root=tmp_path / "jobs")
    (tmp_path / "s.py").write_text(BODY)
    job = backend.submit(JobSpec(script=str(tmp_path / "s.py")))
    backend.wait(job.id, timeout_s=60)
    view = describe(backend, job.id)
    assert view.job.stage == "COMPLETED" and view.error is None
    assert (view.progress.step, view.progress.max_steps, view.progress.loss, view.progress.eval_loss) == (3, 3, 1.0, 1.5)
    assert view.outcome == {"steps": 3}

    tail = read_logs(backend, job.id, tail=500)
    assert len(tail.lines) == 200 and tail.total_lines == 305 and "use since=0" in tail.note
    assert tail.lines[-1].startswith("TUNEPACK_DONE")
    first = read_logs(backend, job.id, since=0)
    assert first.first_line == 0 and len(first.lines) == 200 and first.next_since == 200
    assert "since=200" in first.note
    rest = read_logs(backend, job.id, since=first.next_since)
    assert len(rest.lines) == 105 and rest.note == "" and rest.lines[-1].startswith("TUNEPACK_DONE")


def test_failed_job_carries_its_error(tmp_path):
    backend = LocalBackend(root=tmp_path / "jobs")
    (tmp_path / "e.py").write_text("print('TUNEPACK_ERROR ' + __import__('json').dumps("
                                   "{'kind': 'data', 'problem': 'Bad rows.', 'fix': 'Drop them.'}))\nraise SystemExit(3)\n")
    job = backend.submit(JobSpec(script=str(tmp_path / "e.py")))
    backend.wait(job.id, timeout_s=60)
    view = describe(backend, job.id)
    assert view.job.stage == "ERROR" and view.error.startswith("Bad rows.") and "Fix: Drop them." in view.error
    assert "read the error" in view.next_step


def test_pages_stay_near_8_kb(tmp_path):
    backend = LocalBackend(root=tmp_path / "jobs")
    (tmp_path / "w.py").write_text("for i in range(100):\n    print(str(i) * 300)\n")
    job = backend.submit(JobSpec(script=str(tmp_path / "w.py")))
    backend.wait(job.id, timeout_s=60)
    page = read_logs(backend, job.id, since=0)
    assert len(page.model_dump_json()) < 9000 and all(len(line) <= 402 for line in page.lines)
    assert page.next_since == len(page.lines) < 100 and f"since={page.next_since}" in page.note
    tail = read_logs(backend, job.id, tail=200)
    assert len(tail.model_dump_json()) < 9000 and tail.lines[-1].startswith("99")


def test_a_sweep_controller_points_at_its_runs(tmp_path):
    """The controller logs no steps of its own: waiting on it names sweep_status, which shows each run."""
    backend = LocalBackend(root=tmp_path / "jobs")
    (tmp_path / "c.py").write_text("import time\ntime.sleep(30)\n")
    job = backend.submit(JobSpec(script=str(tmp_path / "c.py"),
                                 labels={"sweep": "lr-grid-1a2b", "stage": "sweep", "slot": "none"}))
    try:
        view = describe(backend, job.id)
        assert view.progress is None and "sweep_status('lr-grid-1a2b')" in view.next_step, view.next_step
    finally:
        backend.cancel(job.id)
    plain = backend.submit(JobSpec(script=str(tmp_path / "c.py")))
    try:
        assert "sweep_status" not in describe(backend, plain.id).next_step
    finally:
        backend.cancel(plain.id)
