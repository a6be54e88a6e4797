"""Sweep plans: diffs, flavors, time and cost, the canary, the budget, and the runs the ledger refuses."""

import json

import pytest

from support.common import REPO
from mcp_server.approval import ApprovalError, Budget, Consent
from mcp_server.errors import ConfigError
from mcp_server.ledger import Ledger
from mcp_server.sweeps import list_sweeps, plan_sweep, read_state, submit_sweep, sweep_dir
from mcp_server.sweeps.plan import build_plan, identity
from mcp_server.config import TrainConfig
from support.sweeps import hub_base, tiny_base, unique


def local_spec(short_data, **extra):
    project = unique("plan")
    return {"name": "p", "base": tiny_base(short_data, project), "ledger": project,
            "grid": {"training.learning_rate": [0.003, 0.01], "lora.r": [4, 8]}, **extra}


def test_the_example_plan():
    plan = plan_sweep(REPO / "examples" / "sweep.yaml")
    assert plan.backend == "local" and plan.total_runs == 4 and plan.max_concurrent == 2
    assert [r.changes for r in plan.runs][1] == {"training.learning_rate": 0.003, "lora.r": 16}
    assert plan.canary == {"run": "r02", "steps": 2}  # the heaviest run (highest rank) goes first
    assert all(r.flavor == "local" and r.worst_case_usd == 0 and not r.needs_approval for r in plan.runs)
    assert plan.metric == {"name": "eval_loss", "direction": "min", "reduce": "last"}
    assert plan.total_worst_case_usd == 0 and plan.within_budget and plan.expected_wall_s > 0
    assert len({r.config_hash for r in plan.runs}) == 4
    free = plan_sweep({**__import__("yaml").safe_load((REPO / "examples" / "sweep.yaml").read_text()),
                       "base": str(REPO / "examples" / "demo.yaml"), "budget_usd": 0})  # free runs only: fits
    assert free.budget_cap_usd == 0 and free.within_budget and free.total_runs == 4


def test_refuses_what_the_ledger_says_not_to_repeat(short_data):
    spec = local_spec(short_data)
    plan, configs, _ = build_plan(spec)
    ledger = Ledger(spec["ledger"])
    diverged = ledger.propose("lr 0.01 is too high", "training.learning_rate", 0.01)  # a single-variable failure
    ledger.claim("w", diverged.id)
    ledger.record(diverged.id, "discard", note="diverged")  # discard = do-not-repeat by default
    tried = ledger.propose("r01 exactly", "lora.r", 4, config=identity(TrainConfig.model_validate(configs["r01"])))
    again = plan_sweep(spec)
    refused = {r.id: r.refused for r in again.runs if r.refused}
    assert set(refused) == {"r01", "r03", "r04"}
    assert "training.learning_rate=0.01 is marked do-not-repeat" in refused["r03"] and f"#{diverged.id}" in refused["r03"]
    assert f"repeats experiment #{tried.id} (proposed)" in refused["r01"]
    assert again.total_runs == 1 and again.canary["run"] == "r02"
    assert any("refused by the ledger" in n for n in again.notes)


def test_hf_plan_costs_and_placement(short_data):
    project = unique("plan-hf")
    spec = {"name": "h", "base": hub_base(short_data, project), "backend": "hf", "flavor": "a10g-small",
            "timeout_s": 3600, "grid": {"training.learning_rate": [1e-4, 2e-4, 4e-4]}}
    plan = plan_sweep(spec)
    assert plan.needs_approval and plan.total_worst_case_usd == pytest.approx(3.0)
    assert all(r.worst_case_usd == 1.0 and r.timeout_s == 3600 for r in plan.runs)
    assert plan.daily_budget_left_usd == 10.0 and plan.within_budget
    default = plan_sweep({**spec, "timeout_s": None})  # no timeout: the estimate plus 30 %, ≥ 30 min
    assert all(r.timeout_s >= 1800 for r in default.runs)
    with pytest.raises(ConfigError, match="needs 2 GPUs, but flavor 'a10g-small' has 1 GPU"):
        plan_sweep({**spec, "set": {"distributed.processes": 2}})
    multi = plan_sweep({**spec, "flavor": "l4x4", "set": {"distributed.processes": 4, "distributed.strategy": "fsdp"}})
    assert multi.runs[0].processes == 4 and multi.runs[0].launch.startswith("accelerate launch --config_file")
    with pytest.raises(ConfigError, match="cannot run on HF Jobs"):
        plan_sweep({**spec, "base": tiny_base(short_data, project)})
    with pytest.raises(ConfigError, match="no task 'humaneval'"):
        plan_sweep({**spec, "metric": {"name": "eval/humaneval/pass@1"}})


def test_budget_refusal_before_anything_starts(short_data):
    project = unique("budget")
    spec = {"name": "b", "base": hub_base(short_data, project), "backend": "hf", "flavor": "t4-small",
            "timeout_s": 3600, "budget_usd": 1.0, "grid": {"training.learning_rate": [1e-4, 2e-4, 4e-4]}}
    before = set(list_sweeps())
    plan = plan_sweep(spec)
    assert plan.total_worst_case_usd == pytest.approx(1.2) and not plan.within_budget
    assert not plan_sweep({**spec, "budget_usd": 0}).within_budget  # 0: free runs only
    with pytest.raises(ApprovalError, match=r"Budget refused: .*over the sweep's budget_usd cap of \$1.00"):
        submit_sweep(spec)
    Budget().set_limit(project, 0.5)  # the human's daily limit binds too
    with pytest.raises(ApprovalError, match=r"\$0.50 left of project"):
        submit_sweep({**spec, "budget_usd": 10})
    assert set(list_sweeps()) == before and Ledger(project).list() == []


def test_a_paid_sweep_needs_one_approval_for_its_total(short_data):
    project = unique("approve")
    spec = {"name": "a", "base": hub_base(short_data, project), "backend": "hf", "flavor": "t4-small",
            "timeout_s": 3600, "budget_usd": 5, "grid": {"lora.r": [8, 16]}}
    quote = submit_sweep(spec, start=False)
    assert quote.status == "approval_required" and quote.sweep_id is None and "up to $0.80" in quote.next_step
    with pytest.raises(ApprovalError, match="different arguments"):
        submit_sweep({**spec, "grid": {"lora.r": [8, 32]}}, consent=Consent(token=quote.decision.approval_token),
                     arguments={"spec": {**spec, "grid": {"lora.r": [8, 32]}}}, start=False)
    quote = submit_sweep(spec, start=False)
    done = submit_sweep(spec, consent=Consent(token=quote.decision.approval_token), start=False)
    assert done.status == "submitted" and done.decision.via == "token"
    state = read_state(sweep_dir(done.sweep_id))
    assert state.approved_usd == pytest.approx(0.8) and [r.status for r in state.runs] == ["pending", "pending"]
    ledger = Ledger(project)
    assert [e.status for e in ledger.list()] == ["proposed", "proposed"]
    assert [e.id for e in ledger.list()] == [r.experiment_id for r in state.runs]
    assert ledger.list()[0].variable == "lora.r" and json.loads(ledger.list()[1].value) == 16
    plan = json.loads((sweep_dir(done.sweep_id) / "plan.json").read_text())
    assert plan["configs"]["r01"]["tracking"]["run_name"] == f"{done.sweep_id}-r01"
    again = plan_sweep(spec)  # the same sweep again: every run repeats a proposed experiment
    assert again.total_runs == 0 and all("repeats experiment" in r.refused for r in again.runs)


def test_local_runs_are_timed_with_their_held_out_passes_and_the_cpu_they_share(short_data, monkeypatch):
    """Trial M: a plan said 71 s a run for runs that took 4–6 minutes, two at a time with a held-out loss pass
    every 10 steps. Each run's estimate now counts both, and the plan says so."""
    monkeypatch.setenv("TUNEPACK_LOCAL_MAX_JOBS", "2")
    alone = plan_sweep(local_spec(short_data, max_concurrent=1))
    side_by_side = plan_sweep(local_spec(short_data, max_concurrent=2))
    startup = 30.0
    assert side_by_side.runs[0].expected_s - startup == pytest.approx(2 * (alone.runs[0].expected_s - startup), rel=0.01)
    assert any("shares with the 1 run(s) beside it" in n for n in side_by_side.notes)
    assert not any("beside it" in n for n in alone.notes)
    spec = local_spec(short_data, max_concurrent=1)
    held = {**spec, "base": {**spec["base"], "data": {**spec["base"]["data"], "eval_fraction": 0.25}}}
    assert plan_sweep(held).runs[0].expected_s > plan_sweep(spec).runs[0].expected_s  # 9 held-out passes
