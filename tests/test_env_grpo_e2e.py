"""GRPO inside the coding environment on CPU: scripted episodes of the environment (the reference solution run and
tested) warm-start the Qwen3 replica with SFT, then `tunepack run` trains it with environment: coding for 4 steps.
The environment counts its own rollouts, tool calls and rewards; every rollout is a Pi session; the verified filter
keeps exactly the passing ones. About 1.5 minutes.

The warm start takes 60 SFT steps, not 20: on the random replica 20 and 40 steps teach no parsable call (0 of 32
samples at temperature 0.3 and 0.5), 60 steps give 26 of 32 at 0.3 (measured with the tools in TRL's order)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.common import run_cli
from support.grpo import prompt_files, run_config

from mcp_server.evals.kit.rollouts import meta_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env_run(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("env-grpo")
    train, val = prompt_files(folder)
    done = run_cli("env-trajectories", str(train), "-o", str(folder / "warm.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    sft = run_config(folder, "warm", {
        "model": {"name": "tiny:qwen3"}, "quantization": "none", "data": {"path": str(folder / "warm.jsonl")},
        "training": {"learning_rate": 0.01, "max_steps": 60, "per_device_train_batch_size": 8, "max_length": 1024,
                     "logging_steps": 20, "seed": 0, "warmup_ratio": 0.0},
        "lora": {"r": 32, "alpha": 64, "dropout": 0.0}, "tracking": {"project": "env-grpo"},
        "output": {"name": "env-warm"}, "eval": {"tasks": []}})
    grpo = run_config(folder, "env", {
        "model": {"name": "tiny:qwen3", "adapter": "env-warm"}, "quantization": "none", "data": {"path": str(train)},
        "training": {"method": "grpo", "learning_rate": 0.002, "max_steps": 4, "per_device_train_batch_size": 8,
                     "logging_steps": 1, "seed": 0, "warmup_ratio": 0.0},
        "grpo": {"num_generations": 4, "max_completion_length": 256, "temperature": 0.3, "heldout_path": str(val),
                 "eval_steps": 2, "eval_prompts": 8, "signal_prompts": 4},
        "environment": "coding", "tracking": {"project": "env-grpo"}, "output": {"name": "env-grpo"},
        "eval": {"tasks": []}})
    adapter = Path(grpo["adapter_path"])
    return {"folder": folder, "sft": sft, "grpo": grpo, "adapter": adapter,
            "manifest": json.loads((adapter / "tunepack_manifest.json").read_text()),
            "log": Path(grpo["log_path"]).read_text()}


def test_rollouts_reach_the_environment_and_the_reward_comes_from_the_hidden_tests(env_run):
    grpo = env_run["manifest"]["grpo"]
    env = grpo["environment"]
    assert env["name"] == "coding" and env["rollouts"] == 4 * 8  # 4 steps x 2 prompts x 4 generations
    assert env["reached"] / env["rollouts"] >= 0.5, env  # counted by the environment itself
    assert sum(env["tool_calls"].values()) >= env["reached"] and set(env["tool_calls"]) <= {
        "read_file", "run_python", "run_tests", "write_file"}
    assert env["rewards"]["no_code_penalty"] >= env["rollouts"] - env["reached"]  # unreached never ran code
    # the 48 train problems and the 8 held-out ones scored (grpo.eval_prompts): every reference solves its task
    assert grpo["ceiling"] == {**grpo["ceiling"], "problems": 48 + 8, "solvable": 56, "by": "environment"}
    assert grpo["signal"]["mixed_share"] >= 0.1 and grpo["rewards"] == {}
    metrics = [json.loads(line.split(" ", 1)[1]) for line in env_run["log"].splitlines()
               if line.startswith("TUNEPACK_METRIC")]
    trained = [m for m in metrics if "rewards/CodingEnv/mean" in m]
    assert len(trained) == 4 and all(-0.3 <= m["rewards/CodingEnv/mean"] <= 1.0 for m in trained)
    assert sum(m["tools/call_frequency"] for m in trained) > 0  # TRL's tool loop ran the calls
    curve = [m for m in metrics if "eval/env_reward" in m]
    assert [c["step"] for c in curve] == [0, 2, 4] and all("eval/env/reached" in c for c in curve)
    card = Path(env_run["grpo"]["card_path"]).read_text()
    assert "Environment: coding" in card and f"{env['rollouts']} training rollouts" in card


def test_every_rollout_is_a_trace_with_its_reward_and_the_verified_filter_keeps_the_passing_ones(env_run, tmp_path):
    folder = env_run["adapter"] / "rollouts"
    train = sorted((folder / "train").rglob("*.jsonl"))
    held = sorted((folder / "eval").rglob("*.jsonl"))
    assert len(train) == 32 and len(held) == 8 * 4  # the base model (adapter off) and 3 evaluations, 8 each
    metas = [meta_of(p) for p in train]
    assert all(m["split"] == "train" and m["problem"].startswith("mbpp/") for m in metas)
    assert [step["method"] for step in metas[0]["lineage"]] == ["sft", "grpo"]
    assert sum(m["reward"] for m in metas) == pytest.approx(
        sum(m["hidden_passed"] / m["hidden"] - 0.2 * m["penalties"]["no_code"] - 0.1 * m["penalties"]["over_budget"]
            for m in metas))
    converted = run_cli("traces", "convert", str(folder / "train"), "-o", str(tmp_path / "all.jsonl"))
    assert converted.returncode == 0, converted.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    # every rollout that reached the environment holds a call, so it is a conversation (empty replies are dropped)
    reached = sum(bool(sum(m["calls"].values())) for m in metas)
    assert reached <= len(rows) <= 32 and [t["function"]["name"] for t in rows[0]["tools"]] == [
        "read_file", "run_python", "run_tests", "write_file"]
    verified = sum(bool(m["verified"]) for m in metas)
    only = run_cli("traces", "convert", str(folder / "train"), "-o", str(tmp_path / "v.jsonl"), "--only-verified")
    if verified:
        assert only.returncode == 0 and len((tmp_path / "v.jsonl").read_text().splitlines()) <= verified
    else:  # the replica solves nothing yet: nothing passes the filter, and the conversion says so
        assert only.returncode != 0 and "No rows were left" in only.stderr
