"""The rendered script on an ephemeral machine: it pushes checkpoints, the adapter and its manifest
to the output repo as it trains, and a retried job resumes from the last pushed checkpoint.
Runs the real script (TRL + PEFT + huggingface_hub) against the Hub stand-in."""

import json
import os
import subprocess
import sys
import time

import pytest

from mcp_server.config import parse_config
from mcp_server.jobs.markers import parse
from mcp_server.methods import write_script

pytestmark = pytest.mark.slow


def render(tmp_path, tiny_model_dir, short_data, steps, name):
    cfg = parse_config({"model": {"name": str(tiny_model_dir)}, "data": {"path": str(short_data)},
                        "training": {"max_steps": steps, "save_steps": 2, "logging_steps": 1, "max_length": 128,
                                     "gradient_checkpointing": False, "learning_rate": 0.005},
                        "tracking": {"project": "push-tests"}})
    return write_script(cfg, tmp_path / f"{name}-{steps}.py", run_name=name,
                        push={"repo_id": "alice/pushed-sft", "private": True})


def run(tmp_path, script, attempt, kill_after_step=None):
    """Run the script (as a job would); with ``kill_after_step``, SIGKILL it once that step has been logged."""
    out = tmp_path / f"out{attempt}"
    with subprocess.Popen([sys.executable, str(script), "--output-dir", str(out)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=os.environ.copy(), cwd=tmp_path) as proc:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            record = parse(line).get("METRIC", [{}])[-1]
            if kill_after_step is not None and record.get("step", 0) >= kill_after_step and "loss" in record:
                time.sleep(1.0)  # the checkpoint of the step before is pushed in the background
                proc.kill()
                break
        code = proc.wait(timeout=600)
    text = "".join(lines)
    if kill_after_step is None:
        assert code == 0, text[-4000:]
    return text


def test_push_then_resume_from_the_pushed_checkpoint(hub, tmp_path, tiny_model_dir, short_data):
    script = render(tmp_path, tiny_model_dir, short_data, steps=20, name="push-a")
    killed = run(tmp_path, script, 0, kill_after_step=3)
    assert "no checkpoint to resume from" in killed and "TUNEPACK_DONE" not in killed
    repo = hub.state.repos["alice/pushed-sft"]
    assert repo["private"] is True and "last-checkpoint/trainer_state.json" in repo["files"]
    pushed_step = json.loads(repo["files"]["last-checkpoint/trainer_state.json"])["global_step"]
    assert pushed_step % 2 == 0 and 2 <= pushed_step < 20

    second = run(tmp_path, script, 1)  # the retry: the same script, so the same run and config
    assert "resuming from the checkpoint pushed by an earlier attempt" in second
    steps = [m["step"] for m in parse(second).get("METRIC", []) if "loss" in m]
    assert steps and min(steps) == pushed_step + 1 and max(steps) == 20
    (done,) = parse(second).get("DONE", [])
    assert done["manifest"]["training"]["steps"] == 20 and done["hub_repo"] == "alice/pushed-sft"
    files = set(repo["files"])
    assert {"adapter_config.json", "adapter_model.safetensors", "tunepack_manifest.json",
            "last-checkpoint/adapter_model.safetensors"} <= files
    assert done["hub_commit"] == repo["commits"][-1]
    assert json.loads(repo["files"]["tunepack_manifest.json"])["training"]["steps"] == 20
    for request in hub.state.requests:
        assert request.headers.get("authorization") == f"Bearer {hub.state.token}" or request.path == "/api/agent-harnesses"

    other = run(tmp_path, render(tmp_path, tiny_model_dir, short_data, steps=4, name="push-b"), 2)
    assert "belongs to another run (push-a" in other and "resuming from" not in other  # never another run's checkpoint
    assert [m["step"] for m in parse(other).get("METRIC", []) if "loss" in m][0] == 1
