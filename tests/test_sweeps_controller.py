"""The sweep controller on HF Jobs, against the loopback Hub stand-in, one poll at a time: one approval for
the sweep, the canary first, labels, metrics from the job logs, a retry only after an infrastructure
failure, no retry after a script crash, an early stop with a cancel, the Hub adapter recorded, the pick."""

import json

import pytest

from support.common import short_conversation, write_jsonl
from mcp_server.approval import Budget, Consent
from mcp_server.ledger import Ledger
from mcp_server.registry import LocalRegistry
from mcp_server.sweeps import read_state, select_sweep, submit_sweep, sweep_dir, sweep_status
from mcp_server.sweeps.controller import Controller
from support.sweeps import hub_base, unique


def metric(step: int, loss: float) -> str:
    return "TUNEPACK_METRIC " + json.dumps({"step": step, "max_steps": 20, "loss": loss, "grad_norm": 1.0})


def finished(config: dict, run_name: str, losses: list[float]) -> list[str]:
    manifest = {"config": config, "tunepack_version": "0.1.0",
                "quantization": {"used_4bit": True, "reason": "auto: CUDA present"}, "chat_template": "model",
                "dataset": {"format": "messages", "train_rows": 6, "eval_rows": 0, "fingerprint": "f", "files": []},
                "mask_check": {"rows_checked": 6, "trained_token_share": 0.2, "longest_row_tokens": 90,
                               "max_length": 1024, "rows_truncated": 0, "rows_dropped": 0},
                "training": {"steps": 20, "train_runtime_s": 60.0, "first_loss": losses[0], "last_loss": losses[-1]},
                "device": {"type": "cuda", "name": "T4"}, "trackio": {"project": config["tracking"]["project"],
                                                                     "run": run_name},
                "libraries": {"trl": "1.16.0"}}
    repo = f"alice/{config['output']['name']}"
    return [metric(10 * (i + 1), v) for i, v in enumerate(losses)] + [
        "TUNEPACK_DONE " + json.dumps({"steps": 20, "first_loss": losses[0], "last_loss": losses[-1],
                                       "used_4bit": True, "hub_repo": repo, "hub_commit": "c0ffee",
                                       "manifest": manifest})]


def test_an_hf_sweep_from_approval_to_the_pick(hub, tmp_path):
    project = unique("hf-sweep")
    data = write_jsonl(tmp_path / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
    spec = {"name": "hf", "base": hub_base(data, project), "backend": "hf", "flavor": "t4-small", "timeout_s": 3600,
            "budget_usd": 5, "max_concurrent": 2, "canary": {"run": "r01", "steps": 2}, "retries": 1,
            "early_stop": {"patience": 2}, "metric": {"name": "loss"},
            "grid": {"training.learning_rate": [1e-4, 2e-4, 4e-4, 8e-4]}}
    quote = submit_sweep(spec, start=False)
    assert quote.status == "approval_required" and quote.plan.total_worst_case_usd == pytest.approx(1.6)
    assert hub.requests("POST", "/api/jobs/alice") == []
    sweep = submit_sweep(spec, consent=Consent(token=quote.decision.approval_token), start=False)
    folder = sweep_dir(sweep.sweep_id)
    configs = json.loads((folder / "plan.json").read_text())["configs"]
    hub.state.repos[f"alice/{project}"] = {"type": "model", "private": True, "files": {}, "commits": ["c0"]}
    ctl = Controller(folder, poll_s=0)

    def jobs() -> dict[str, str]:
        """sweep run -> its latest job id, from what the stand-in received"""
        out = {}
        for job_id, job in hub.state.jobs.items():
            out[job["labels"]["sweep_run"]] = job_id
        return out

    ctl.step()  # the canary alone
    assert list(jobs()) == ["r01"]
    labels = hub.state.jobs[jobs()["r01"]]["labels"]
    assert labels["sweep"] == sweep.sweep_id and labels["config_hash"] == read_state(folder).run("r01").config_hash
    assert labels["stage"] == "train" and hub.state.jobs[jobs()["r01"]]["flavor"] == "t4-small"
    assert Budget().status(project).charged_usd == pytest.approx(0.4)  # each paid job is charged when submitted
    ctl.step()
    assert list(jobs()) == ["r01"]  # no clean steps logged yet: the others wait

    canary = jobs()["r01"]
    hub.set_stage(canary, "RUNNING")
    hub.state.logs[canary] = [metric(1, 2.0), metric(2, 1.9)]
    ctl.step()  # two clean steps: r02 joins (max_concurrent 2)
    assert sorted(jobs()) == ["r01", "r02"]
    row = next(r for r in sweep_status(sweep.sweep_id).rows if r.run == "r01")
    assert row.step == 2 and row.last_loss == 1.9 and row.status == "running" and row.cost_usd >= 0

    first_r02 = jobs()["r02"]
    hub.set_stage(first_r02, "ERROR", "Job timed out")  # lost to the infrastructure, no script output
    ctl.step()
    assert jobs()["r02"] != first_r02 and read_state(folder).run("r02").attempts == 2  # resubmitted once

    hub.state.logs[canary] = finished(configs["r01"], f"{sweep.sweep_id}-r01", [2.0, 1.2])
    hub.set_stage(canary, "COMPLETED")
    ctl.step()  # r01 recorded with its Hub repo; r03 starts
    r01 = read_state(folder).run("r01")
    assert r01.status == "completed" and r01.result["hub_repo"] == f"alice/{project}" and r01.metric_value == 1.2
    assert LocalRegistry().get(project, r01.result["registry_version"]).hub_commit == "c0ffee"
    assert sorted(jobs()) == ["r01", "r02", "r03"]

    r02, r03 = jobs()["r02"], jobs()["r03"]
    hub.set_stage(r02, "RUNNING")
    hub.state.logs[r02] = [metric(1, 2.0), metric(2, 2.0), metric(3, 2.4), metric(4, 2.9)]  # diverging
    hub.state.logs[r03] = ["Traceback (most recent call last):", "torch.OutOfMemoryError: CUDA out of memory"]
    hub.set_stage(r03, "ERROR", "Job timed out")  # a timeout message, but the script crashed: no retry
    ctl.step()
    state = read_state(folder)
    assert state.run("r02").status == "stopped" and state.run("r02").failure == "diverged"
    assert hub.requests("POST", f"/api/jobs/alice/{r02}/cancel")
    assert state.run("r03").status == "failed" and state.run("r03").failure == "script"
    assert state.run("r03").attempts == 1 and "CUDA out of memory" in state.run("r03").error
    assert any(a["run"] == "r02" and a["trackio"] for a in state.alerts)
    assert sorted(jobs()) == ["r01", "r02", "r03", "r04"]

    r04 = jobs()["r04"]
    hub.state.logs[r04] = finished(configs["r04"], f"{sweep.sweep_id}-r04", [2.0, 1.5])
    hub.set_stage(r04, "COMPLETED")
    assert ctl.step() is False  # every run finished
    state = read_state(folder)
    assert state.status == "done" and state.report["png_path"]
    assert [r.status for r in state.runs] == ["completed", "stopped", "failed", "completed"]
    assert len(hub.requests("POST", "/api/jobs/alice")) == 5  # 4 runs + 1 infrastructure retry

    pick = select_sweep(sweep.sweep_id)
    assert pick.best.run == "r01" and pick.best.adapter == f"alice/{project}" and pick.recorded
    assert [r.run for r in pick.ranking][:2] == ["r01", "r04"]
    statuses = {e.id: (e.status, e.do_not_repeat, e.metric_value) for e in Ledger(project).list()}
    ids = {r.id: r.experiment_id for r in state.runs}
    assert statuses[ids["r01"]] == ("keep", False, 1.2) and statuses[ids["r04"]] == ("discard", False, 1.5)
    assert statuses[ids["r02"]][:2] == ("discard", False) and statuses[ids["r03"]][0] == "crash"  # rose: may repeat
    assert "private Hub repo" in pick.next_step
