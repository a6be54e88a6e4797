"""An eval job says where it is and keeps what it finished: EVALPROGRESS markers become the job's progress (task,
model, items done of total, time left) in jobs_status / jobs_wait; each finished task is recorded at once, so a job
stopped by its timeout still answers eval_results with the finished tasks (and isError, naming the missing ones);
a job that failed without a word gets the fix for its kind."""

from __future__ import annotations

import json
import time

from mcp_server.jobs import JobInfo, JobSpec, get_backend
from mcp_server.jobs.base import failure_error, failure_fix
from mcp_server.jobs.views import describe


def job_info(**kw) -> JobInfo:
    return JobInfo(**{"id": "local-x", "backend": "local", "name": "x", "stage": "ERROR", "created_at": time.time(),
                      "exit_code": 1, **kw})


def test_a_failed_job_gets_the_fix_for_its_kind():
    assert "nothing to fix" in failure_fix(job_info(stage="CANCELED", labels={"stage": "eval"}))
    timed_out = job_info(message="killed after its timeout of 60 s", labels={"stage": "eval"})
    assert "finished tasks are kept (eval_results" in failure_fix(timed_out)
    assert "longer timeout" in failure_fix(job_info(message="killed after its timeout of 60 s", labels={"stage": "train"}))
    assert "pipeline_preflight again" in failure_fix(job_info(labels={"stage": "preflight"}))
    assert "eval.sandbox" in failure_fix(job_info(labels={"stage": "eval"}))
    assert "per_device_train_batch_size" in failure_fix(job_info(labels={"stage": "train"}))


def test_a_cancelled_run_is_a_cancel_whatever_its_script_said_as_it_stopped():
    """A training script stopped by a cancel may print its own error on the way out; the job was cancelled, and
    that is what the person is told (not the script's crash and its out-of-memory advice)."""
    log = 'TUNEPACK_ERROR {"problem": "The training script failed.", "fix": "lower the batch size (out of memory)"}\n'
    err = failure_error(job_info(stage="CANCELED", exit_code=None, labels={"stage": "train"}), log)
    assert "was cancelled" in err.problem and "nothing to fix" in err.fix and "memory" not in str(err)
    crashed = failure_error(job_info(labels={"stage": "train"}), log)  # the same log from a job that failed
    assert crashed.problem.startswith("The training script failed.") and "out of memory" in crashed.fix


def test_an_eval_jobs_markers_are_its_progress(tmp_path):
    script = tmp_path / "eval.py"
    lines = [{"task": "humaneval", "model": "base", "done": 3, "total": 3, "eta_s": 0.0},
             {"task": "next-action", "model": "base", "done": 40, "total": 257, "eta_s": 88.5}]
    script.write_text("import json, time\n"
                      + "".join(f"print('TUNEPACK_EVALPROGRESS ' + json.dumps({line!r}), flush=True)\n" for line in lines)
                      + "print('TUNEPACK_EVALPARTIAL ' + json.dumps({'done': ['humaneval'], 'missing': ['next-action']}),"
                        " flush=True)\ntime.sleep(30)\n")
    backend = get_backend("local")
    job = backend.submit(JobSpec(script=str(script), name="progress", labels={"stage": "eval"}))
    try:
        for _ in range(100):
            view = describe(backend, job.id)
            if view.progress is not None and view.progress.done == 40:
                break
            time.sleep(0.1)
        progress = view.progress
        assert (progress.task, progress.model, progress.done, progress.total, progress.eta_s) == (
            "next-action", "base", 40, 257, 88.5)
        assert progress.tasks_done == ["humaneval"] and progress.step is None
        from mcp_server.server.job_tools import progress_note

        assert progress_note(progress) == (40.0, 257, "next-action on base: 40/257, about 88 s left")
    finally:
        backend.cancel(job.id)


def test_a_pipeline_jobs_view_shows_its_eval_and_a_withdrawal_after_training(tmp_path):
    """A pipeline job trains, registers, then evaluates: once registered its progress is the eval's; at the end
    the outcome carries the eval table, and a version register_when withdrew is said to be withdrawn."""
    script = tmp_path / "pipeline.py"
    records = [("METRIC", {"step": 10, "max_steps": 10, "loss": 1.0}),
               ("REGISTERED", {"registry_name": "line", "registry_version": 3, "adapter_path": "/x"}),
               ("EVALPROGRESS", {"task": "next-action", "model": "adapter", "done": 5, "total": 20, "eta_s": 9.0}),
               ("EVALUATED", {"table": "| task | base | adapter |", "withdrawn": "does not beat the base: x"})]
    script.write_text("import json, sys\nstep = sys.argv[1]\n" + "".join(
        f"print('TUNEPACK_{kind} ' + json.dumps({body!r}), flush=True)\n" + ("" if kind != "EVALPROGRESS" else
        "import time\nif step == 'eval': time.sleep(30)\n") for kind, body in records))
    backend = get_backend("local")
    running = backend.submit(JobSpec(script=str(script), name="pipeline", args=["eval"], labels={"stage": "train"}))
    try:
        for _ in range(100):
            view = describe(backend, running.id)
            if view.progress is not None and view.progress.task:
                break
            time.sleep(0.1)
        assert (view.progress.task, view.progress.done, view.progress.total) == ("next-action", 5, 20)
    finally:
        backend.cancel(running.id)
    done = backend.submit(JobSpec(script=str(script), name="pipeline", args=["end"], labels={"stage": "train"}))
    backend.wait(done.id, timeout_s=60)
    view = describe(backend, done.id)
    assert view.outcome["registry_version"] == 3 and view.outcome["eval_table"] == "| task | base | adapter |"
    assert view.outcome["withdrawn"] and "line v3 was trained, evaluated and then withdrawn" in view.next_step


def test_the_kit_reports_each_finished_task_with_the_missing_ones(monkeypatch):
    """run_eval calls back after each task of each model: before the end only the tasks every model finished,
    with the rest named as missing; the final results carry no partial flag."""
    from mcp_server.evals.kit import runner

    spec = {"tasks": ["next-action", "bfcl:simple_python"], "models": [{"label": "base"}, {"label": "adapter"}]}

    def fake_tool_tasks(spec, tasks, progress, contamination, finished):
        rows = {t: {"task": t, "metric": "m", "n": 1, "scores": {}, "status": {}, "metrics": {}} for t in tasks}
        for model in ("base", "adapter"):
            for task in tasks:
                rows[task]["scores"][model], rows[task]["status"][model] = 0.5, "scored"
                finished(rows)
        return rows, {}

    monkeypatch.setattr(runner, "run_tool_tasks", fake_tool_tasks)
    monkeypatch.setattr(runner, "ensure_token_counting", lambda: "offline")
    monkeypatch.setattr(runner, "_contamination", lambda spec, problems, progress: {})
    monkeypatch.setattr(runner, "_check_spec", lambda spec: "namespaces")
    snapshots = []
    final = runner.run_eval(spec, progress=lambda line: None, partial=snapshots.append)
    assert [s["missing"] for s in snapshots] == [["next-action", "bfcl:simple_python"]] * 2 + [["bfcl:simple_python"],
                                                                                                []]
    assert [r["task"] for r in snapshots[2]["tasks"]] == ["next-action"] and all(s["partial"] for s in snapshots)
    assert "partial" not in final and [r["task"] for r in final["tasks"]] == spec["tasks"]


def test_a_stopped_eval_answers_with_what_finished(tmp_path, monkeypatch):
    """eval_results on an eval job killed by its timeout: the partial results it left are recorded with the
    registry version (its card) and returned, with the missing task and the timeout's fix."""
    from mcp_server.evals import service
    from mcp_server.home import home_dir
    from mcp_server.registry import LocalRegistry

    registry = LocalRegistry()
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "org/base"}))
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")
    from mcp_server.registry.card import RESULTS_END, RESULTS_START

    entry = registry.push(adapter, "stopped-eval", card=f"# stopped-eval\n\n{RESULTS_START}\nNot evaluated yet.\n"
                                                        f"{RESULTS_END}\n")
    out = tmp_path / "eval-output"
    out.mkdir()
    row = {"task": "humaneval", "metric": "pass@1", "n": 3, "samples": 1, "scores": {"base": 0.0, "adapter": 1 / 3},
           "stderr": {}, "status": {"base": "scored", "adapter": "scored"}, "logs": {}, "contamination": None}
    (out / "results.partial.json").write_text(json.dumps({
        "partial": True, "missing": ["next-action"], "tasks": [row], "sandbox": "namespaces", "isolated": True,
        "models": [{"label": "base"}, {"label": "adapter"}], "loaded": {}, "limit": 3, "ids": [], "temperature": 0.0,
        "duration_s": 1.0, "token_counting": "offline", "allow_contaminated": False}))
    eval_id = "eval-stopped-1"
    home_dir("evals", eval_id).joinpath("eval_run.json").write_text(json.dumps({
        "registry_name": entry.name, "registry_version": entry.version, "script": "eval.py",
        "output_dir": str(out), "render": {}}))
    stuck = tmp_path / "stuck.py"
    stuck.write_text("import time\nprint('evaluating', flush=True)\ntime.sleep(60)\n")
    backend = get_backend("local")
    job = backend.submit(JobSpec(script=str(stuck), name=eval_id, timeout_s=1,
                                 labels={"stage": "eval", "eval_id": eval_id}))
    info = backend.wait(job.id, timeout_s=60)
    assert info.stage == "ERROR" and "timeout" in info.message
    summary = service.eval_results(job_id=job.id)
    assert summary["partial"] and summary["missing"] == ["next-action"]
    assert "finished tasks are kept" in summary["error"]
    assert summary["tasks"][0]["scores"]["adapter"] == 1 / 3
    card = open(entry.card_path, encoding="utf-8").read()
    assert "humaneval" in card and "0.333" in card  # the card shows the finished task
