"""GRPO in the tutorial's order, on CPU: a Qwen3 replica SFT-trained on coding problems (20 steps) is trained
further with GRPO (model.adapter) on a deliberately gameable reward file (it pays for code fences), with the real
tests reward logged beside it as a monitor: the hacking check must raise the alert and stop the run. Also the
RL preflight (ceiling, sizing, the starting model's groups) and a GRPO sweep of two runs. About 2 minutes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from support.common import write_jsonl
from support.grpo import BLOCKS_REWARD, prompt_files, run_config, sft_rows

from mcp_server.jobs import markers

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("grpo-problems")
    train, val = prompt_files(folder)
    return {"folder": folder, "train": train, "val": val}


@pytest.fixture(scope="module")
def code_sft(problems) -> dict:
    """SFT first (the tutorial's order): 20 steps of prompt -> fenced reference solution."""
    folder = problems["folder"]
    raw = {"model": {"name": "tiny:qwen3"}, "quantization": "none",
           "data": {"path": str(sft_rows(problems["train"], folder))},
           "training": {"learning_rate": 0.01, "max_steps": 20, "per_device_train_batch_size": 16, "max_length": 128,
                        "logging_steps": 5, "seed": 0, "warmup_ratio": 0.0},
           "lora": {"r": 16, "alpha": 32, "dropout": 0.0}, "tracking": {"project": "grpo-ladder"},
           "output": {"name": "code-sft"}, "eval": {"tasks": []}}
    return run_config(folder, "code-sft", raw)


def _grpo(problems: dict, name: str, **sections) -> dict:
    raw = {"model": {"name": "tiny:qwen3", "adapter": "code-sft"}, "quantization": "none",
           "data": {"path": str(problems["train"])},
           "training": {"method": "grpo", "learning_rate": 0.02, "max_steps": 20, "per_device_train_batch_size": 16,
                        "logging_steps": 2, "seed": 0, "warmup_ratio": 0.0},
           "grpo": {"num_generations": 8, "max_completion_length": 48, "heldout_path": str(problems["val"]),
                    "eval_steps": 4},
           "tracking": {"project": "grpo-ladder"}, "output": {"name": name}, "eval": {"tasks": []}}
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return raw


@pytest.fixture(scope="module")
def gamed(problems, code_sft) -> dict:
    blocks = problems["folder"] / "blocks.py"
    blocks.write_text(BLOCKS_REWARD)
    raw = _grpo(problems, "code-grpo-blocks", grpo={"rewards": {"blocks": 1.0}, "reward_files": {"blocks": str(blocks)}})
    result = run_config(problems["folder"], "gamed", raw)
    result["log"] = Path(result["log_path"]).read_text()
    result["manifest"] = json.loads((Path(result["adapter_path"]) / "tunepack_manifest.json").read_text())
    return result


def test_a_gameable_reward_raises_the_alert_and_stops_the_run(gamed):
    (alert,) = markers.parse(gamed["log"])["ALERT"]
    assert alert["stopped"] and alert["title"] == "reward hacking suspected"
    assert "held-out tests (a monitor) did not rise" in alert["reason"], alert
    grpo = gamed["manifest"]["grpo"]
    assert grpo["monitor"] == ["tests"] and grpo["alerts"][0]["step"] == alert["step"] < 20  # stopped early
    curve = grpo["curve"]
    assert curve[-1]["components"]["blocks"] > curve[0]["components"]["blocks"]  # the gamed reward rose ...
    assert curve[-1]["components"]["tests"] <= curve[0]["components"]["tests"]  # ... the real one did not
    metrics = [json.loads(line.split(" ", 1)[1]) for line in gamed["log"].splitlines()
               if line.startswith("TUNEPACK_METRIC")]
    assert any("eval/monitor/tests" in m for m in metrics) and not any("eval/reward/tests" in m for m in metrics)
    assert any("rewards/tests/mean" in m for m in metrics)  # the monitor is scored on the training completions too
    card = Path(gamed["card_path"]).read_text()
    assert "**Reward hacking suspected** at step" in card and "the run stopped there" in card


def test_grpo_trains_the_registered_sft_adapter_further_and_says_so(gamed, code_sft, problems):
    grpo, manifest = gamed["manifest"]["grpo"], gamed["manifest"]
    start = grpo["start"]
    assert start["ref"] == f"code-sft@v{code_sft['registry_version']}" and start["method"] == "sft"
    assert start["lora"] == {"r": 16, "alpha": 32, "targets": start["lora"]["targets"]}
    assert [step["method"] for step in manifest["lineage"]] == ["sft", "grpo"]
    assert grpo["base_heldout"]["n"] == grpo["curve"][0]["n"] == 16  # the base (adapter off) scored once too
    config = json.loads((Path(gamed["adapter_path"]) / "adapter_config.json").read_text())
    assert config["r"] == 16  # the SFT adapter's own LoRA, not a new one
    sha = hashlib.sha256(BLOCKS_REWARD.encode()).hexdigest()
    assert grpo["reward_files"]["blocks"]["sha256"] == sha and grpo["reward_errors"] == {"blocks": 0}
    assert grpo["ceiling"]["ceiling"] == 1.0 and grpo["ceiling"]["problems"] == 48 + 16
    card = Path(gamed["card_path"]).read_text()
    assert "## Where it started" in card and f"`{start['ref']}`" in card and "→ sft `code-sft`" in card
    assert "| reward | " in card and "| tests (monitor) |" in card and f"sha256 `{sha[:16]}…`" in card
    # the script embeds the reward file and refuses one edited after rendering
    script = Path(gamed["script_path"]).read_text()
    assert "completion.count(\"```\") / 2" in script


def test_the_rl_preflight_reports_the_ceiling_the_sizing_and_the_groups(problems, code_sft, tmp_path):
    from mcp_server.jobs import get_backend
    from mcp_server.pipeline import preflight

    rows = [json.loads(line) for line in problems["train"].read_text().splitlines()]
    rows.append({"id": "mine/inc", "prompt": "Write inc(x) that adds one.", "tests": ["assert inc(1) == 2"],
                 "solution": "def inc(x):\n    return x"})  # the user's own row; its reference is wrong
    data = write_jsonl(tmp_path / "mine.jsonl", rows)
    path = tmp_path / "grpo.yaml"

    def check(rewards: dict) -> tuple:
        raw = _grpo(problems, "code-grpo-tests", data={"path": str(data)},
                    grpo={"rewards": rewards, "signal_prompts": 8, "length_target": 24})
        path.write_text(yaml.safe_dump(raw))
        report = preflight(path)
        assert report.ok, report.model_dump_json(indent=1)
        job = get_backend("local").wait(report.smoke_job.id, timeout_s=300)
        return report, job, markers.parse(get_backend("local").logs(job.id))["PREFLIGHT"][-1]

    # the SFT replica never passes a test nor writes one clean block: every group is flat, refused in the job
    report, job, outcome = check({"tests": 1.0, "format": 0.2})
    assert job.stage == "ERROR" and not outcome["ok"] and outcome["smoke"] is None
    assert "groups from the starting model have mixed rewards" in outcome["rl_check"]["problem"]
    # no completion earned anything: the fix says sampling more cannot help, and what can
    assert "never earns the reward" in outcome["rl_check"]["fix"] and "cannot help" in outcome["rl_check"]["fix"]
    # a reward the groups disagree on passes; the ceiling, the sizing and the signal are reported
    report, job, outcome = check({"tests": 1.0, "length": 0.2})
    checks = {c.name: c for c in report.checks}
    assert "16 completions per step = 2 prompt(s) x 8 generations" in checks["grpo"].detail
    assert "starts from code-sft@v" in checks["grpo"].detail and "no scored test shown" in checks["grpo"].detail
    assert "64 of 65 reference solutions pass" in checks["ceiling"].detail and "mine/inc" in checks["ceiling"].detail
    assert report.grpo["ceiling"]["impossible"] == ["mine/inc"]
    assert job.stage == "COMPLETED" and outcome["ok"], outcome
    rl = outcome["rl_check"]
    assert rl["status"] == "pass" and rl["ceiling"]["impossible"] == ["mine/inc"] and rl["train_prompts"] == 48
    assert rl["signal"]["groups"] == 8 and rl["signal"]["mixed_share"] >= 0.1 and rl["start"].startswith("code-sft@v")
    # each reward's own signal: the groups disagree on length, never on tests (the replica passes none), said
    by = rl["signal"]["by_reward"]
    assert by["length"]["mixed"] >= 1 and by["tests"]["mixed"] == 0 and rl["signal"]["only_shaping"] == "tests"
    assert outcome["smoke"]["status"] == "pass"
    # a scored test shown in the prompt is refused before any job, with the fix
    rows[0]["prompt"] += "\n" + rows[0]["tests"][0]
    write_jsonl(data, rows)
    leaked = preflight(path)
    assert not leaked.ok and "show a scored test in their prompt" in {c.name: c for c in leaked.checks}["data"].detail
