"""Real local sweeps of the tiny model (≤ 20 steps, 128 tokens; the divergent run is stopped early):
submitted through the MCP tool, at most two runs at once, the canary first, a planted divergent run
stopped with a Trackio alert, a controller killed and resumed, selection on a logged metric, the
report; and a broken canary that stops the sweep before anything else starts."""

import base64
import os
import signal
import sqlite3
import time

import pytest

from mcp_server.jobs import get_backend
from mcp_server.ledger import Ledger
from mcp_server.registry import LocalRegistry
from mcp_server.sweeps import plan_sweep, submit_sweep, sweep_dir, sweep_status
from mcp_server.sweeps.run import resume_sweep
from support.sweeps import tiny_base, unique, wait_for
from test_server import ok, session

pytestmark = pytest.mark.slow
PNG_MAGIC = b"\x89PNG"


def max_overlap(jobs) -> int:
    events = sorted([(j.started_at, 1) for j in jobs if j.started_at] +
                    [(j.ended_at, -1) for j in jobs if j.started_at and j.ended_at])
    level = peak = 0
    for _, change in events:
        level += change
        peak = max(peak, level)
    return peak


def test_a_real_local_sweep(short_data):
    project = unique("sweep-local")
    spec = {"name": "local", "base": tiny_base(short_data, project, max_steps=10, learning_rate=0.01),
            "runs": [{"lora.r": 8}, {"lora.r": 4},
                     # planted: the largest learning rate the schema allows with a weight decay that overshoots
                     {"training.learning_rate": 1.0, "training.weight_decay": 10.0, "training.max_steps": 200}],
            "max_concurrent": 2, "canary": {"run": "r01", "steps": 3}, "early_stop": {"patience": 2},
            "metric": {"name": "mean_token_accuracy"}}

    async def submit(client):
        return ok(await client.call_tool("sweep_submit", {"spec": spec}))

    started = session(submit)
    assert started["status"] == "submitted" and started["decision"]["status"] == "not_needed"
    sweep_id = started["sweep_id"]
    folder = sweep_dir(sweep_id)

    # kill the controller once the canary is submitted: the status says so, and a resume carries on
    state = wait_for(sweep_id, lambda s: s.run("r01").job_id and s.controller.pid, timeout=60)
    os.kill(state.controller.pid, signal.SIGKILL)
    local = get_backend("local")
    deadline = time.time() + 30
    while not local.status(state.controller.job_id).done and time.time() < deadline:
        time.sleep(0.2)
    view = sweep_status(sweep_id)
    assert view.controller["state"] == "crashed" and "resume" in view.next_step
    resumed = resume_sweep(sweep_id)
    assert resumed.controller_job.id != state.controller.job_id

    state = wait_for(sweep_id, timeout=300)
    assert state.status == "done", state.model_dump_json(indent=1)[-2000:]
    r01, r02, r03 = state.runs
    assert r01.status == r02.status == "completed" and r01.jobs == [state.run("r01").job_id]  # re-attached, not resubmitted
    assert state.controller.starts == 2
    # the canary gate: the others were submitted only after the canary logged 3 clean steps
    assert state.canary["passed"] and all(r.submitted_at >= state.canary["passed_at"] for r in (r02, r03))
    train_jobs = [j for j in local.list(labels={"sweep": sweep_id}) if j.labels.get("sweep_run")]
    assert len(train_jobs) == 3 and max_overlap(train_jobs) == 2  # 2 local slots; the controller takes none
    # the planted divergent run was stopped early, with an alert in Trackio
    assert r03.status == "stopped" and r03.failure == "diverged" and r03.step < 200
    assert local.status(r03.job_id).stage == "CANCELED"
    assert any(a["run"] == "r03" and a["trackio"] for a in state.alerts)
    with sqlite3.connect(os.path.join(os.environ["TRACKIO_DIR"], f"{project}.db")) as db:
        alerts = db.execute("SELECT run_name, title FROM alerts").fetchall()
    assert (r03.run_name, f"sweep {sweep_id}: r03 stopped early") in alerts
    assert len(LocalRegistry().list(project)) == 2  # the stopped run registered nothing

    async def pick(client):
        status = ok(await client.call_tool("sweep_status", {"sweep_id": sweep_id}))
        chosen = ok(await client.call_tool("sweep_select", {"sweep_id": sweep_id}))
        report = await client.call_tool("sweep_report", {"sweep_id": sweep_id})
        return status, chosen, report

    status, chosen, report = session(pick)
    assert status["status"] == "done" and status["counts"] == {"completed": 2, "stopped": 1}
    values = {r.id: r.metric_value for r in (r01, r02)}
    best = max(values, key=values.get)
    assert chosen["best"]["run"] == best and chosen["metric"]["name"] == "mean_token_accuracy"
    assert chosen["metric"]["direction"] == "max" and chosen["recorded"]
    assert chosen["best"]["adapter"] == LocalRegistry().get(project, chosen["best"]["registry_version"]).path
    assert "registry_publish(name=" in chosen["next_step"]
    assert not report.is_error and report.content[0].type == "text" and "| rank | run |" in report.content[0].text
    assert report.content[1].type == "image" and base64.b64decode(report.content[1].data)[:4] == PNG_MAGIC
    assert report.structured_content["markdown_path"].startswith(str(folder))

    experiments = {e.id: e for e in Ledger(project).list()}
    by_run = {r.id: experiments[r.experiment_id] for r in state.runs}
    assert by_run[best].status == "keep" and by_run[best].metric_name == "mean_token_accuracy"
    other = "r02" if best == "r01" else "r01"
    assert by_run[other].status == "discard" and not by_run[other].do_not_repeat
    assert by_run["r03"].status == "discard" and "early-stopped (" in by_run["r03"].note
    assert by_run["r03"].do_not_repeat == ("early-stopped (nan)" in by_run["r03"].note)  # only a NaN condemns
    again = plan_sweep(spec)  # the same sweep again: nothing left to run
    refused = again.runs[2].refused
    assert again.total_runs == 0 and refused
    if by_run["r03"].do_not_repeat:  # its loss became NaN: condemned, with the MCP call that lifts a wrong verdict
        assert "do-not-repeat" in refused and "do_not_repeat=false) lifts it" in refused
    else:  # its loss rose: not condemned, but the same config again would give the same result
        assert "repeats experiment" in refused and "change a value" in refused


def test_a_broken_canary_stops_the_sweep_before_the_others_start(short_data):
    project = unique("sweep-canary")
    base = tiny_base(short_data, project, max_length=24)  # cuts trained tokens: the script's mask check fails
    spec = {"name": "broken", "base": base, "grid": {"training.learning_rate": [0.003, 0.01, 0.02]},
            "max_concurrent": 2}
    sweep = submit_sweep(spec)
    state = wait_for(sweep.sweep_id, timeout=120)
    assert state.status == "canary_failed"
    canary = state.run(state.canary["run"])
    assert canary.status == "failed" and canary.failure == "script" and "max_length=24" in canary.error
    others = [r for r in state.runs if r is not canary]
    assert all(r.status == "skipped" and r.failure == "canary" and r.job_id is None for r in others)
    assert len([j for j in get_backend("local").list(labels={"sweep": sweep.sweep_id}) if j.labels.get("sweep_run")]) == 1
    assert "nothing else started" in sweep_status(sweep.sweep_id).next_step
    assert any(a["title"].endswith("canary failed") for a in state.alerts)
    assert {e.status for e in Ledger(project).list()} == {"crash"}  # may be proposed again once fixed
