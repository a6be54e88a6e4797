"""Preflight's immediate checks, and its job's outcome for a passing and a failing mask check."""

import json

import pytest

from mcp_server.jobs import get_backend
from mcp_server.jobs.markers import parse
from mcp_server.pipeline.preflight import SMOKE_STEPS, preflight, smoke_config
from mcp_server.config import parse_config
from support.common import run_cli


def cfg_file(tmp_path, data, **extra) -> str:
    path = tmp_path / "cfg.yaml"
    body = {"model": {"name": "tiny:qwen3"}, "data": {"path": str(data)},
            "training": {"max_length": 128, "max_steps": 4}, "tracking": {"project": "preflight-tests"}}
    body.update(extra)
    path.write_text(json.dumps(body))
    return str(path)


def statuses(report):
    return {c.name: c.status for c in report.checks}


def test_bad_config_stops_at_the_first_check(tmp_path):
    (tmp_path / "cfg.yaml").write_text("model: {name: x/y}\ndata: {path: a.jsonl}\ntraining: {lr: 1}\n")
    report = preflight(tmp_path / "cfg.yaml")
    assert not report.ok and statuses(report) == {"config": "fail"}
    assert "unknown key 'training.lr'" in report.checks[0].detail and report.checks[0].fix


def test_remote_checks_pass_with_a_write_token(hub, tmp_path, short_data):
    report = preflight(cfg_file(tmp_path, short_data, model={"name": "Qwen/Qwen3-0.6B"}), backend="hf",
                       flavor="a10g-small", timeout_s=3600, smoke=False)
    s = statuses(report)
    assert report.ok and s["model"] == "pending" and s["hf_token"] == s["hub_write"] == s["jobs_namespace"] == "pass"
    assert report.cost.worst_case_usd == 1.0 and report.cost.needs_approval
    assert "needs human approval" in next(c.detail for c in report.checks if c.name == "cost")


def test_remote_checks_fail_with_a_read_token_or_a_narrow_fine_grained_one(hub, tmp_path, short_data):
    path = cfg_file(tmp_path, short_data, model={"name": "Qwen/Qwen3-0.6B"}, output={"hub_repo_id": "team/x"})
    hub.state.role = "read"
    report = preflight(path, backend="hf", flavor="t4-small", timeout_s=3600, smoke=False)
    s = statuses(report)
    assert not report.ok and s["hub_write"] == s["jobs_namespace"] == "fail"
    assert "cannot write repos in 'team'" in next(c.detail for c in report.checks if c.name == "hub_write")
    hub.state.role = "fineGrained"
    hub.state.fine_grained = {"scoped": [{"entity": {"type": "org", "name": "team"}, "permissions": ["repo.write"]},
                                         {"entity": {"type": "user", "name": "alice"}, "permissions": ["job.write"]}]}
    s = statuses(preflight(path, backend="hf", flavor="t4-small", timeout_s=3600, smoke=False))
    assert s["hub_write"] == s["jobs_namespace"] == "pass"


def test_remote_checks_fail_on_a_rejected_token(hub, tmp_path, short_data):
    hub.state.fail[("GET", "/api/whoami-v2")] = 401
    report = preflight(cfg_file(tmp_path, short_data, model={"name": "Qwen/Qwen3-0.6B"}), backend="hf",
                       flavor="t4-small", timeout_s=3600, smoke=False)
    check = next(c for c in report.checks if c.name == "hf_token")
    assert not report.ok and check.status == "fail" and "token was rejected" in check.detail and check.fix


def test_unknown_flavor_fails_the_cost_check(tmp_path, short_data):
    report = preflight(cfg_file(tmp_path, short_data), backend="hf", flavor="h100", timeout_s=60)
    assert not report.ok and statuses(report)["cost"] == "fail"


def test_smoke_config_keeps_the_data_and_shrinks_the_rest(tmp_path, short_data):
    cfg = parse_config({"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(short_data), "eval_fraction": 0.2},
                        "chat_template": "trl:qwen3", "quantization": "4bit",
                        "training": {"max_length": 4096, "max_steps": 500, "eval_steps": 50}})
    small = smoke_config(cfg)
    assert small.model.name == "tiny:qwen3" and small.data.path == cfg.data.path and small.data.eval_fraction is None
    assert small.training.max_steps == SMOKE_STEPS
    assert small.training.max_length == 4096  # the config's: a shorter window dropped every turn of long sessions
    assert small.quantization == "none" and small.chat_template == "model"


@pytest.mark.parametrize("model,family", [("google/gemma-4-E2B-it", "gemma4"), ("meta-llama/Llama-3.2-1B-Instruct", "llama3"),
                                          ("Qwen/Qwen3-0.6B", "qwen3"), ("tiny:gemma4", "gemma4")])
def test_the_smoke_run_uses_the_replica_of_the_models_family(short_data, model, family):
    cfg = parse_config({"model": {"name": model}, "data": {"path": str(short_data)}})
    assert smoke_config(cfg).model.name == f"tiny:{family}"


@pytest.mark.slow
def test_preflight_job_passes_then_fails_on_a_template_that_drops_tool_calls(tmp_path, short_data):
    backend = get_backend("local")
    good = preflight(cfg_file(tmp_path, short_data))
    info = backend.wait(good.smoke_job.id, timeout_s=300)
    (result,) = parse(backend.logs(info.id)).get("PREFLIGHT", [])
    assert info.stage == "COMPLETED" and result["ok"] and result["smoke"]["steps"] == SMOKE_STEPS

    bad = preflight(cfg_file(tmp_path, short_data, chat_template="trl:llama3"))
    info = backend.wait(bad.smoke_job.id, timeout_s=300)
    (result,) = parse(backend.logs(info.id)).get("PREFLIGHT", [])
    assert info.stage == "ERROR" and not result["ok"]
    assert result["mask_check"]["status"] == "fail" and "drops assistant tool calls" in result["mask_check"]["problem"]


def test_grpo_on_hf_runs_its_rl_check_on_the_runs_flavor_after_a_human_yes(hub, tmp_path):
    """The starting model's groups need the real model on its GPU: preflight (free) checks the plan and the ceiling
    and runs the mask check on cpu-basic; `tunepack rl-check` is the quoted HF job on the run's own flavor, which
    waits for an approval."""
    from mcp_server.approval import Consent
    from mcp_server.methods.grpo.check import RL_CHECK_TIMEOUT_S
    from mcp_server.pipeline.preflight import rl_check
    from support.common import write_jsonl

    rows = write_jsonl(tmp_path / "prompts.jsonl", [
        {"id": f"p{i}", "prompt": f"Write twice{i}(x).", "tests": [f"assert twice{i}(2) == 4"],
         "solution": f"def twice{i}(x):\n    return 2 * x"} for i in range(8)])
    path = cfg_file(tmp_path, rows, model={"name": "Qwen/Qwen3-0.6B"},
                    training={"method": "grpo", "max_steps": 4, "per_device_train_batch_size": 8},
                    grpo={"rewards": {"tests": 1.0}, "num_generations": 8})
    report = preflight(path, backend="hf", flavor="a10g-small", timeout_s=3600)
    try:
        checks = {c.name: c for c in report.checks}
        assert report.ok and "8 of 8 reference solutions pass" in checks["ceiling"].detail
        assert "tunepack rl-check CONFIG --flavor a10g-small" in checks["remote_rl_check"].detail
        (mask_job,) = hub.requests("POST", "/api/jobs/alice")
        assert mask_job.body["flavor"] == "cpu-basic" and "--check-only" in json.dumps(mask_job.body["command"])
    finally:
        get_backend("local").cancel(report.smoke_job.id)
    quoted = rl_check(path, flavor="a10g-small", consent=Consent())
    assert not quoted.ok and quoted.approval["approval_token"] and len(hub.requests("POST", "/api/jobs/alice")) == 1
    assert "approve" in quoted.next_step.lower() or "approval" in quoted.next_step.lower()
    approved = rl_check(path, flavor="a10g-small", consent=Consent(token=quoted.approval["approval_token"]))
    assert approved.ok and approved.remote_job, approved.model_dump_json(indent=1)
    submit = hub.requests("POST", "/api/jobs/alice")[-1]
    assert submit.body["flavor"] == "a10g-small" and submit.body["timeoutSeconds"] == RL_CHECK_TIMEOUT_S
    assert "--rl-check" in json.dumps(submit.body["command"]) and "TUNEPACK_RLCHECK" in approved.next_step
    refused = run_cli("rl-check", path, "--flavor", "a10g-small")  # no terminal, no --yes: nothing starts
    assert refused.returncode != 0 and "terminal" in refused.stderr.lower()
    assert len(hub.requests("POST", "/api/jobs/alice")) == 2
