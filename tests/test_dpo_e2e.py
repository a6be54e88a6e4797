"""DPO end to end on CPU, as a user types it: a GRPO run's rollouts folder (the coding environment's real episodes:
a passing and a failing rollout per problem, support/dpo.py) → `tunepack dpo pairs` → `tunepack run` on the
tiny Qwen3 replica with a quarter of the pairs held out by prompt. The held-out chosen-minus-rejected margin must
rise, the adapter be registered under the method's name, and the card show the held-out table. About 90 s on
two cores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from support.common import run_cli
from support.dpo import env_rollouts

STEPS = 10


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("dpo-e2e")
    run_dir = env_rollouts(folder, problems=12)
    pairs = folder / "pairs.jsonl"
    built = run_cli("dpo", "pairs", str(run_dir), "-o", str(pairs))
    assert built.returncode == 0, built.stderr[-2000:]
    config = {"model": {"name": "tiny:qwen3"}, "quantization": "none",
              "data": {"path": str(pairs), "eval_fraction": 0.25},
              "lora": {"r": 16, "alpha": 32, "dropout": 0.0},
              "training": {"method": "dpo", "learning_rate": 0.005, "max_steps": STEPS,
                           "per_device_train_batch_size": 4, "max_length": 768, "logging_steps": 5, "seed": 1,
                           "warmup_ratio": 0.0},
              "dpo": {"beta": 0.1}, "tracking": {"project": "dpo-e2e"}, "eval": {"tasks": []}}
    path = folder / "dpo.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    manifest = json.loads((Path(result["adapter_path"]) / "tunepack_manifest.json").read_text())
    return {"result": result, "manifest": manifest, "built": built.stdout, "config": config, "folder": folder}


def test_the_held_out_margin_rises(run):
    heldout = run["manifest"]["dpo"]["heldout"]
    before, after = heldout["before"], heldout["after"]
    assert before["pairs"] == after["pairs"] == 3  # 12 problems, a quarter held out by prompt
    assert after["margin"] > before["margin"], heldout
    assert after["reward_margin"] > 0 and after["reward_accuracy"] > 0.5, heldout
    assert run["manifest"]["training"]["steps"] == STEPS and run["manifest"]["method"] == "dpo"


def test_only_assistant_tokens_trained_in_the_collated_batches(run):
    mask = run["manifest"]["mask_check"]
    assert mask["pairs"] == 9 and mask["heldout_pairs"] == 3 and mask["format"] == "prompt_completion"
    assert mask["rows_checked"] == 18 and not mask["problems"]  # each answer verified token by token
    assert mask["batches"]["sequences"] > 0 and mask["batches"]["trained_tokens"] > 0


def test_the_adapter_is_registered_and_the_card_shows_the_held_out_table(run):
    result = run["result"]
    assert result["registry_name"] == "tiny-qwen3-dpo"
    listed = json.loads(run_cli("registry", "list", "tiny-qwen3-dpo", "--json").stdout)
    assert [v["run_name"] for v in listed] == [result["run_name"]]
    card = Path(result["card_path"]).read_text()
    heldout = run["manifest"]["dpo"]["heldout"]
    assert "direct preference optimisation" in card and "- dpo" in card
    assert "| held-out (3 pairs) | before | after |" in card
    assert (f"| chosen − rejected log-prob margin | {heldout['before']['margin']:.4g} | "
            f"{heldout['after']['margin']:.4g} |") in card
    assert "| preference accuracy (chosen likelier) |" in card
    assert "- Held-out evaluation: 3 held-out pairs; measured on them: the preference accuracy" in card


def test_trackio_has_the_dpo_metrics(run):
    import os

    from mcp_server.tracking import TrackioStore

    summary = TrackioStore(os.environ["TRACKIO_DIR"]).summary("dpo-e2e", run["result"]["trackio_run"])
    assert summary.last["eval/dpo/margin"] > summary.first["eval/dpo/margin"]
    assert "rewards/margins" in summary.last and "rewards/accuracies" in summary.last


def test_dpo_trains_a_registered_adapter_further(run):
    """model.adapter: DPO from an earlier rung's adapter (here the run above), TRL's frozen copy of it as the
    reference. The same held-out pairs score the same before as they did after the first run: the start is loaded."""
    start = f"{run['result']['registry_name']}@v{run['result']['registry_version']}"
    config = {**run["config"], "model": {"name": "tiny:qwen3", "adapter": start},
              "training": {**run["config"]["training"], "max_steps": 2}, "output": {"name": "dpo-further"}}
    path = run["folder"] / "further.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    adapter = Path(result["adapter_path"])
    manifest = json.loads((adapter / "tunepack_manifest.json").read_text())
    assert manifest["dpo"]["reference"] == f"the starting adapter {start} (a frozen copy)"
    before, first = manifest["dpo"]["heldout"]["before"], run["manifest"]["dpo"]["heldout"]["after"]
    assert before["pairs"] == first["pairs"] and before["margin"] == pytest.approx(first["margin"], rel=1e-3)
    assert [r["method"] for r in manifest["lineage"]] == ["dpo", "dpo"]
    assert not (adapter / "ref").exists() and (adapter / "adapter_model.safetensors").is_file()
