"""The rendered script on an ephemeral machine: it pushes checkpoints, the adapter and its manifest
to the output repo as it trains, and a retried job resumes from the last pushed checkpoint.
Runs the real script (TRL + PEFT + huggingface_hub) against the Hub stand-in."""

import json
import os
import subprocess
import sys

import pytest

from mcp_server.config import parse_config
from mcp_server.jobs.markers import parse
from mcp_server.train.render import write_script

pytestmark = pytest.mark.slow


def run(tmp_path, tiny_model_dir, short_data, steps, attempt):
    cfg = parse_config({"model": {"name": str(tiny_model_dir)}, "data": {"path": str(short_data)},
                        "training": {"max_steps": steps, "save_steps": 2, "logging_steps": 1, "max_length": 128,
                                     "gradient_checkpointing": False, "learning_rate": 0.005},
                        "tracking": {"project": "push-tests"}})
    script = write_script(cfg, tmp_path / f"train{attempt}.py", run_name=f"push-{attempt}",
                          push={"repo_id": "alice/pushed-sft", "private": True})
    done = subprocess.run([sys.executable, str(script), "--output-dir", str(tmp_path / f"out{attempt}")],
                          capture_output=True, text=True, timeout=600, env=os.environ.copy(), cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_push_then_resume_from_the_pushed_checkpoint(hub, tmp_path, tiny_model_dir, short_data):
    first = run(tmp_path, tiny_model_dir, short_data, steps=4, attempt=0)
    repo = hub.state.repos["alice/pushed-sft"]
    assert repo["private"] is True
    files = set(repo["files"])
    assert {"adapter_config.json", "adapter_model.safetensors", "tunepack_manifest.json",
            "last-checkpoint/trainer_state.json", "last-checkpoint/adapter_model.safetensors"} <= files
    (done,) = parse(first).get("DONE", [])
    assert done["hub_repo"] == "alice/pushed-sft" and done["hub_commit"] == repo["commits"][-1]
    assert done["manifest"]["training"]["steps"] == 4
    assert json.loads(repo["files"]["tunepack_manifest.json"])["training"]["steps"] == 4
    assert "no checkpoint to resume from" in first
    for request in hub.state.requests:
        assert request.headers.get("authorization") == f"Bearer {hub.state.token}" or request.path == "/api/agent-harnesses"

    second = run(tmp_path, tiny_model_dir, short_data, steps=6, attempt=1)
    assert "resuming from the checkpoint pushed by an earlier attempt" in second
    steps = [m["step"] for m in parse(second).get("METRIC", []) if "loss" in m]
    assert steps and min(steps) > 4 and max(steps) == 6
    assert parse(second).get("DONE", [])[0]["manifest"]["training"]["steps"] == 6
