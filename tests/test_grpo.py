"""GRPO, the first slice of the third rung: the config rules, the built-in rewards, and `tunepack run` on the Qwen3
replica with a learnable reward (length), whose held-out curve must rise by more than two standard errors.
About 30 s on one core."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from mcp_server.config import parse_config
from mcp_server.errors import ConfigError
from mcp_server.train.rewards import format_reward, length_reward, mean_and_stderr
from support.common import run_cli, write_jsonl


def _raw(tmp_path: Path, **extra) -> dict:
    data = write_jsonl(tmp_path / "prompts.jsonl", [{"id": f"p{i}", "prompt": f"Write add{i}(a, b)."} for i in range(96)])
    raw = {"model": {"name": "tiny:qwen3"}, "quantization": "none", "data": {"path": str(data), "eval_fraction": 0.25},
           "training": {"method": "grpo", "per_device_train_batch_size": 16}, "grpo": {"num_generations": 4}}
    for key, value in extra.items():
        raw[key] = {**raw.get(key, {}), **value}
    return raw


def test_a_grpo_config_reads_prompt_rows_and_names_its_method(tmp_path):
    cfg = parse_config(_raw(tmp_path))
    assert cfg.data.format == "prompts" and cfg.registry_name == "tiny-qwen3-grpo" and "-grpo-g4" in cfg.run_name


@pytest.mark.parametrize(("change", "message"), [
    ({"training": {"method": "grpo", "per_device_train_batch_size": 6}}, "is not a multiple of grpo.num_generations"),
    ({"grpo": {"rewards": {"tests_typo": 1.0}}}, "unknown reward tests_typo"),
    ({"grpo": {"rewards": {"length": 0.0}}}, "every reward weight is 0"),
    ({"data": {"format": "messages"}}, "training.method grpo needs prompt-only rows"),
    ({"training": {"method": "sft"}}, "the grpo section applies only to training.method: grpo"),
])
def test_impossible_grpo_configs_are_refused(tmp_path, change, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(_raw(tmp_path, **change))


def test_the_built_in_rewards_score_what_they_say():
    assert format_reward("```python\ndef f():\n    return 1\n```") == 1.0
    assert format_reward("Here:\n```python\nx = 1\n```\nDone.") == 0.5
    assert format_reward("```\nx\n```\n```\ny\n```") == 0.0 and format_reward("no code") == 0.0
    assert length_reward(8, 8) == 1.0 and length_reward(12, 8) == 0.5 and length_reward(40, 8) == 0.0
    mean, stderr = mean_and_stderr([0.0, 1.0, 0.0, 1.0])
    assert mean == 0.5 and math.isclose(stderr, 0.5 / math.sqrt(4) * math.sqrt(4 / 3))


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("grpo")
    raw = _raw(folder, training={"method": "grpo", "learning_rate": 0.02, "max_steps": 20, "logging_steps": 4,
                                 "seed": 0, "warmup_ratio": 0.0, "per_device_train_batch_size": 16},
               grpo={"rewards": {"length": 1.0}, "length_target": 16, "num_generations": 4,
                     "max_completion_length": 32},
               lora={"r": 16, "alpha": 32, "dropout": 0.0}, tracking={"project": "grpo-e2e"},
               output={"name": "grpo-length"}, eval={"tasks": []})
    path = folder / "grpo.yaml"
    path.write_text(yaml.safe_dump(raw))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_held_out_reward_rises_by_more_than_two_standard_errors(grpo_run):
    manifest = json.loads((Path(grpo_run["adapter_path"]) / "tunepack_manifest.json").read_text())
    curve = manifest["grpo"]["curve"]
    assert [c["step"] for c in curve] == [0, 4, 8, 12, 16, 20] and all(c["n"] > 10 for c in curve)
    first, last = curve[:3], curve[-3:]
    gain = sum(c["reward"] for c in last) / 3 - sum(c["reward"] for c in first) / 3
    stderr = math.sqrt(sum(c["stderr"] ** 2 for c in first + last)) / 3  # of the difference of the two means
    assert gain > 2 * stderr, curve


def test_the_card_and_trackio_carry_the_curve_and_each_reward(grpo_run):
    from mcp_server.tracking import TrackioStore

    card = Path(grpo_run["card_path"]).read_text()
    assert "trained with GRPO" in card and "Held-out reward" in card and "length (1.0)" in card
    assert "2 prompt(s)" not in card and "4 prompt(s) x 4 generations" in card
    summary = TrackioStore(str(Path(grpo_run["trackio_dir"]))).summary("grpo-e2e", grpo_run["trackio_run"])
    assert "eval/reward" in summary.last and "rewards/length/mean" in summary.last
    assert grpo_run["registry_name"] == "grpo-length"
