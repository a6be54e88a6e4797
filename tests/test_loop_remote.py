"""[28] The loop on HF Jobs, on the executing stand-in, through `tunepack loop schedule|sync` as a user types them and
huggingface_hub's HfApi as the scheduler would fire it:

1. without a terminal and without --yes the schedule is refused and nothing is created; with --yes its whole bound
   (max_cycles x one cycle's worst case) is approved and charged, the state repo holds the spec, the code and
   loop_state.json, and a scheduled uv job exists;
2. triggered, the job runs one real cycle (sessions from a Hub dataset repo, a tiny Qwen3 trained 8 steps on the
   job's machine, paired scores, a promotion): the adapter repo gets the adapter and the tag `current`, the state
   file records the cycle, and, its one approved cycle run, the job suspends its schedule;
3. triggered again, the job refuses to train past its bound (a TUNEPACK_ERROR line, nothing pushed);
4. `tunepack loop sync` records the promoted adapter in the local registry (once), `tunepack registry list` shows it;
   the `loop_sync` tool, called after it, finds it there.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import yaml
from support.common import run_cli
from support.loop import arrive, retention_set, train_config
from support.remote import api, seed_folder

from mcp_server.jobs import markers

SESSIONS = "alice/loop-sessions"


def _state(client, repo: str) -> dict:
    return json.loads(Path(client.hf_hub_download(repo, "loop_state.json", repo_type="dataset")).read_text())


@pytest.mark.slow
def test_a_scheduled_loop_runs_a_cycle_refuses_past_its_bound_and_its_promotion_syncs(jobs_hub, tmp_path):
    pytest.importorskip("pyseccomp")
    hub, client = jobs_hub, api(jobs_hub)
    arrive(tmp_path / "sessions", 0, 8)
    seed_folder(hub, SESSIONS, tmp_path / "sessions", "dataset")
    retention_set(tmp_path)
    train_config(tmp_path / "train.yaml")
    name = f"remote-{uuid.uuid4().hex[:6]}"
    spec = tmp_path / "loop.yaml"
    spec.write_text(yaml.safe_dump({"name": name, "config": "train.yaml", "sources": [f"hf://datasets/{SESSIONS}"],
                                    "frozen_sessions": 2, "min_new_sessions": 3, "max_cycles": 1,
                                    "retention": {"path": "general.jsonl", "margin": 0.05}}))
    schedule = ["loop", "schedule", str(spec), "--backend", "hf", "--flavor", "a10g-small", "--timeout", "1800"]

    refused = run_cli(*schedule)  # no terminal, no --yes: a paid schedule needs a person's yes
    assert refused.returncode == 1 and "No terminal" in refused.stderr, refused.stderr
    assert not hub.state.schedules and f"alice/{name}-loop" not in hub.state.repos

    made = run_cli(*schedule, "--yes", "--json")
    assert made.returncode == 0, made.stderr[-3000:]
    scheduled = json.loads(made.stdout)
    state_repo, schedule_id = scheduled["state_repo"], scheduled["schedule_id"]
    assert state_repo == f"alice/{name}-loop" and scheduled["bound_usd"] == scheduled["per_cycle_usd"] == 0.5
    assert scheduled["spend"]["decision"]["via"] == "keyboard" and scheduled["spend"]["budget"]["charged_usd"] == 0.5
    info = client.inspect_scheduled_job(scheduled_job_id=schedule_id)
    command = info.job_spec.command
    assert command[:2] == ["uv", "run"] and command[-4:] == ["python", "-m", "mcp_server.loop.remote_job", state_repo]
    assert "torch>=2.6" in command and info.job_spec.flavor == "a10g-small" and info.suspend is False
    assert info.job_spec.secrets == {"HF_TOKEN": "<encrypted>"} and info.concurrency is False
    assert info.job_spec.volumes[0].path == "code" and info.job_spec.volumes[0].revision
    assert client.dataset_info(state_repo).private
    files = set(client.list_repo_files(state_repo, repo_type="dataset"))
    assert {"loop_state.json", "spec/loop.yaml", "spec/train.yaml", "spec/retention.jsonl",
            "code/mcp_server/loop/remote_job.py", "code/mcp_server/assets/templates/sft_train.py.j2"} <= files
    approval = _state(client, state_repo)["approval"]
    assert approval["max_cycles"] == 1 and approval["max_spend_usd"] == 0.5 and approval["code_commit"]

    started = time.monotonic()
    first = client.trigger_scheduled_job(scheduled_job_id=schedule_id)
    job = hub.wait_job(first.id, timeout=900)
    seconds = time.monotonic() - started
    log = "\n".join(hub.job_log(first.id))
    assert job["status"]["stage"] == "COMPLETED", log[-6000:]
    print(f"\nthe scheduled cycle ran in {seconds:.0f} s")
    outcome = markers.parse(log)["LOOP"][-1]
    assert outcome["decision"] == "promote" and outcome["cycle"] == 1, outcome
    state = _state(client, state_repo)
    assert state["cycles_run"] == 1 and len(state["frozen"]) == 2 and len(state["consumed"]) == 6
    assert [r["outcome"] for r in state["runs"]] == ["promote"] and state["runs"][0]["job_id"] == first.id
    assert 0 < state["spend_usd"] <= 0.5
    tagged = client.model_info(f"alice/{name}", revision="current").sha
    assert state["current"] == {"ref": f"{name}@v1", "repo": f"alice/{name}", "commit": tagged, "cycle": 1}
    assert {"adapter_model.safetensors", "tunepack_manifest.json"} <= set(client.list_repo_files(f"alice/{name}"))
    home = set(client.list_repo_files(state_repo, repo_type="dataset"))
    assert f"home/loops/{name}/state.json" in home and f"home/registry/{name}/v1/adapter_model.safetensors" in home
    # its one approved cycle has run: the job suspended its own schedule
    assert state["suspended"].startswith(f"The loop '{name}' ran its 1 approved cycle(s)")
    assert client.inspect_scheduled_job(scheduled_job_id=schedule_id).suspend is True

    second = client.trigger_scheduled_job(scheduled_job_id=schedule_id)  # fired by hand past the bound
    job = hub.wait_job(second.id, timeout=300)
    log = "\n".join(hub.job_log(second.id))
    assert job["status"]["stage"] == "ERROR", log[-3000:]
    error = markers.parse(log)["ERROR"][-1]
    assert error["kind"] == "loop" and "ran its 1 approved cycle(s)" in error["problem"], error
    state = _state(client, state_repo)
    assert [r["outcome"] for r in state["runs"]] == ["promote", "refused"] and state["cycles_run"] == 1
    assert client.model_info(f"alice/{name}", revision="current").sha == tagged  # nothing trained or pushed
    assert [e["event"] for e in hub.state.schedule_events if e["id"] == schedule_id] == [
        "created", "triggered", "suspended", "triggered", "suspended"]

    synced = run_cli("loop", "sync", name, "--json")
    assert synced.returncode == 0, synced.stderr[-3000:]
    assert json.loads(synced.stdout)["registered"] == f"{name}@v1"
    versions = json.loads(run_cli("registry", "list", name, "--json").stdout)
    assert [(v["version"], v["hub_repo"], v["hub_commit"]) for v in versions] == [(1, f"alice/{name}", tagged)]
    from test_server import ok, session

    async def sync_as_a_tool(mcp):  # an agent's way in, on the same state: nothing registered twice
        return ok(await mcp.call_tool("loop_sync", {"name": name}))

    again = session(sync_as_a_tool, extra=("--toolsets", "core,loop"))
    assert again["already"] is True and again["registered"] == f"{name}@v1"
    assert again["cycles_run"] == 1 and again["current"]["commit"] == tagged and again["suspended"]
    assert len(json.loads(run_cli("registry", "list", name, "--json").stdout)) == 1


def test_a_run_is_refused_past_the_approved_cycles_or_spend(monkeypatch):
    from datetime import datetime, timezone
    from types import SimpleNamespace

    from mcp_server.loop.remote import Approval, RemoteState, job_cost, refusal

    approval = Approval(id="a1", namespace="alice", schedule="@weekly", flavor="a10g-small", timeout_s=3600,
                        price_per_hour_usd=1.0, per_cycle_usd=1.0, max_cycles=3, max_spend_usd=2.5)
    state = RemoteState(name="demo", state_repo="alice/demo-loop", adapter_repo="alice/demo", approval=approval)
    assert refusal(state, 1.0) is None
    assert "past the approved $2.50" in refusal(state, 2.6).problem  # this run's worst case would not fit
    state.cycles_run = 3
    assert "ran its 3 approved cycle(s)" in refusal(state, 0.0).problem

    def job(stage, start, end=None, job_id="j"):
        at = lambda s: datetime.fromtimestamp(s, timezone.utc) if s is not None else None  # noqa: E731
        return SimpleNamespace(id=job_id, status=SimpleNamespace(stage=stage), created_at=at(start),
                               started_at=at(start), finished_at=at(end))

    assert job_cost(job("COMPLETED", 0, 1800), approval) == 0.5  # a finished run: its runtime x price
    assert job_cost(job("ERROR", 0, 99999), approval) == 1.0  # never more than its worst case
    assert job_cost(job("RUNNING", time.time() - 10), approval) == 1.0  # a run still going: its worst case
    assert job_cost(job("RUNNING", time.time() - 36), approval, running_as_elapsed="j") < 0.011  # the one asking


def test_a_scheduled_loop_reads_its_sessions_from_the_hub(tmp_path):
    from mcp_server.errors import LoopError
    from mcp_server.loop.schedule import check_remote_spec
    from mcp_server.loop.spec import load_spec

    (tmp_path / "loop.yaml").write_text(yaml.safe_dump({
        "name": "demo", "config": "train.yaml", "sources": ["hf://datasets/alice/s@main", "sessions"],
        "retention": {"path": "general.jsonl"}}))
    spec = load_spec(tmp_path / "loop.yaml")
    assert spec.sources[0] == "hf://datasets/alice/s@main"  # a Hub reference is not made a path
    with pytest.raises(LoopError, match="a scheduled job cannot reach it"):
        check_remote_spec(spec)


def test_loop_schedule_asks_a_human_for_its_whole_bound(hub, tmp_path):
    """An agent's way in, from a client that can ask: the question names every cycle together (max_cycles x one
    cycle's worst case), a no creates nothing, a yes creates the state repo and the schedule, charged the bound."""
    from test_server import answering, ok, session, text

    retention_set(tmp_path)
    train_config(tmp_path / "train.yaml")
    # the config's data.path ('sessions') is not on this machine: the loop's sources are on the Hub
    name = f"asked-{uuid.uuid4().hex[:6]}"
    spec = tmp_path / "loop.yaml"
    spec.write_text(yaml.safe_dump({"name": name, "config": "train.yaml", "sources": [f"hf://datasets/{SESSIONS}"],
                                    "max_cycles": 3, "retention": {"path": "general.jsonl"}}))
    call = {"spec_path": str(spec), "flavor": "a10g-small", "timeout_s": 1800, "schedule": "@daily"}
    asked: list[str] = []

    def answer(action):
        return answering(action, asked)

    missing = session(lambda c: c.call_tool("loop_schedule", call), elicit=answer("accept"),
                      extra=("--toolsets", "core,loop"))  # the sessions are not pushed yet: refused before a quote
    assert missing.is_error and f"source hf://datasets/{SESSIONS} cannot be read" in text(missing), text(missing)
    assert not asked and not hub.state.schedules
    arrive(tmp_path / "sessions-pushed", 0, 2)
    seed_folder(hub, SESSIONS, tmp_path / "sessions-pushed", "dataset")
    declined = session(lambda c: c.call_tool("loop_schedule", call), elicit=answer("decline"),
                       extra=("--toolsets", "core,loop"))
    assert declined.is_error and "The human declined" in text(declined), text(declined)
    assert not hub.state.schedules and f"alice/{name}-loop" not in hub.state.repos
    accepted = ok(session(lambda c: c.call_tool("loop_schedule", call), elicit=answer("accept"),
                          extra=("--toolsets", "core,loop")))
    assert f"'{name}'" in asked[0] and "at most 3 cycle(s) and $1.50 in all" in asked[0], asked[0]
    assert accepted["status"] == "submitted" and accepted["decision"]["via"] == "elicitation"
    assert (accepted["bound_usd"], accepted["per_cycle_usd"], accepted["max_cycles"]) == (1.5, 0.5, 3)
    assert accepted["state_repo"] == f"alice/{name}-loop" and f"loop_sync('{name}')" in accepted["next_step"]
    assert accepted["uploads"] == ["spec/loop.yaml", "spec/retention.jsonl", "spec/train.yaml"]
    assert [s["schedule"] for s in hub.state.schedules.values()] == ["@daily"]
