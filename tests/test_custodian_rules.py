"""[27] Custodian mode's rule, call by call: what counts as the agent's code in a config, and each local entry
point (run, sweep, eval, a script) refusing it with the way that works while the custodian flag is set; the same
calls pass without the flag. The two-account test is tests/reliability/test_custodian.py."""

from __future__ import annotations

import pytest
from support.sweeps import tiny_base, unique

from mcp_server.config import TrainConfig
from mcp_server.config.agent_code import agent_code_paths, eval_code_paths
from mcp_server.config.eval_section import EvalSection
from mcp_server.errors import ApprovalError


def _cfg(**parts) -> TrainConfig:
    raw = {"model": {"name": "tiny:qwen3"}, "data": {"path": "rows.jsonl"}, **parts}
    return TrainConfig.model_validate(raw)


def test_the_agents_code_paths_of_a_config():
    assert agent_code_paths(_cfg()) == []
    assert agent_code_paths(_cfg(grpo={"reward_files": {"mine": "mine.py"}, "rewards": {"mine": 1.0}}, training={"method": "grpo", "per_device_train_batch_size": 8})) == []
    remote = agent_code_paths(_cfg(model={"name": "tiny:qwen3", "trust_remote_code": True}))
    assert len(remote) == 1 and "model.trust_remote_code" in remote[0]
    unsafe = agent_code_paths(_cfg(training={"method": "grpo", "per_device_train_batch_size": 8}, grpo={"sandbox": "unsafe-host"}))
    assert len(unsafe) == 1 and "grpo.sandbox: unsafe-host" in unsafe[0]
    grpo = {"training": {"method": "grpo", "per_device_train_batch_size": 4}, "grpo": {"num_generations": 4}}
    served = agent_code_paths(_cfg(**grpo, environment={"name": "openenv", "env": "count_env:CountEnvironment"}))
    assert len(served) == 1 and "environment.env (count_env:CountEnvironment)" in served[0]
    assert agent_code_paths(_cfg(**grpo, environment={"name": "openenv", "base_url": "http://127.0.0.1:8000"})) == []
    assert agent_code_paths(_cfg(**grpo, environment="coding")) == []  # the coding environment is sandboxed
    assert eval_code_paths(EvalSection(tasks=["humaneval"], sandbox="unsafe-host"))
    assert eval_code_paths(EvalSection(tasks=["humaneval"])) == []


def test_a_local_sweep_with_the_agents_code_is_refused_in_custodian_mode(short_data, monkeypatch):
    from mcp_server.sweeps import submit_sweep

    project = unique("custodian-sweep")
    base = tiny_base(short_data, project)
    spec = {"name": "c", "backend": "local", "base": {**base, "model": {"name": "tiny:qwen3", "trust_remote_code": True}},
            "runs": [{"lora.r": 8}, {"lora.r": 4}]}
    monkeypatch.setenv("TUNEPACK_CUSTODIAN", "1")
    with pytest.raises(ApprovalError) as refused:
        submit_sweep(spec, start=False)
    assert "this local sweep would: model.trust_remote_code" in refused.value.problem
    assert "HF Jobs" in refused.value.fix
    submit_sweep({**spec, "base": base}, start=False)  # the same sweep without the agent's code is recorded


def test_a_local_run_and_a_script_job_are_refused_in_custodian_mode(tmp_path, short_data, monkeypatch):
    from mcp_server.jobs import JobSpec
    from mcp_server.pipeline.run import start_pipeline, submit_script

    script = tmp_path / "mine.py"
    script.write_text("print('hello')\n")
    cfg = TrainConfig.model_validate({**tiny_base(short_data, unique("custodian-run")),
                                      "eval": {"tasks": ["humaneval"], "sandbox": "unsafe-host"}})
    monkeypatch.setenv("TUNEPACK_CUSTODIAN", "1")
    with pytest.raises(ApprovalError, match="a local job of a script would"):
        submit_script(JobSpec(script=str(script)), "local")
    with pytest.raises(ApprovalError, match="eval.sandbox: unsafe-host"):
        start_pipeline(cfg, backend="local")
