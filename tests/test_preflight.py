"""Preflight's immediate checks, and its job's outcome for a passing and a failing mask check."""

import json

import pytest

from conftest import short_conversation, write_jsonl
from mcp_server.jobs import get_backend, parse_markers
from mcp_server.preflight import SMOKE_STEPS, preflight, smoke_config
from mcp_server.config import parse_config


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


def test_hub_model_and_remote_checks_are_pending(tmp_path, short_data):
    report = preflight(cfg_file(tmp_path, short_data, model={"name": "Qwen/Qwen3-0.6B"}), backend="hf",
                       flavor="a10g-small", timeout_s=3600, smoke=False)
    s = statuses(report)
    assert report.ok and s["model"] == "pending" and s["hf_token"] == s["hub_write"] == "pending"
    assert report.cost.worst_case_usd == 1.0 and report.cost.needs_approval
    assert "needs human approval" in next(c.detail for c in report.checks if c.name == "cost")


def test_unknown_flavor_fails_the_cost_check(tmp_path, short_data):
    report = preflight(cfg_file(tmp_path, short_data), backend="hf", flavor="h100", timeout_s=60)
    assert not report.ok and statuses(report)["cost"] == "fail"


def test_smoke_config_keeps_the_data_and_shrinks_the_rest(tmp_path, short_data):
    cfg = parse_config({"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(short_data), "eval_fraction": 0.2},
                        "chat_template": "trl:qwen3", "quantization": "4bit",
                        "training": {"max_length": 4096, "max_steps": 500, "eval_steps": 50}})
    small = smoke_config(cfg)
    assert small.model.name == "tiny:qwen3" and small.data.path == cfg.data.path and small.data.eval_fraction is None
    assert small.training.max_steps == SMOKE_STEPS and small.training.max_length == 512
    assert small.quantization == "none" and small.chat_template == "model"


@pytest.mark.slow
def test_preflight_job_passes_then_fails_on_a_template_that_drops_tool_calls(tmp_path, short_data):
    backend = get_backend("local")
    good = preflight(cfg_file(tmp_path, short_data))
    info = backend.wait(good.smoke_job.id, timeout_s=300)
    (result,) = parse_markers(backend.logs(info.id), "PREFLIGHT")
    assert info.stage == "COMPLETED" and result["ok"] and result["smoke"]["steps"] == SMOKE_STEPS

    bad = preflight(cfg_file(tmp_path, short_data, chat_template="trl:llama3"))
    info = backend.wait(bad.smoke_job.id, timeout_s=300)
    (result,) = parse_markers(backend.logs(info.id), "PREFLIGHT")
    assert info.stage == "ERROR" and not result["ok"]
    assert result["mask_check"]["status"] == "fail" and "drops assistant tool calls" in result["mask_check"]["problem"]
