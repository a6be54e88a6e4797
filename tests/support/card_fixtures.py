"""What a real run's job hands the model card, for every method with and without held-out data: the manifest the
training script wrote and the Trackio summary of its run, kept in tests/fixtures/cards/<method>-<heldout|none>.json.

They were written by real two-step runs on the tiny Qwen3 replica (`python tests/support/card_fixtures.py`, about
six minutes on two cores, rewrites them): SFT and distillation on short conversations (held out: data.eval_fraction
0.25), GRPO on prompts with the length reward (held out: data.eval_fraction 0.25) and GRPO in the coding environment
(held out: grpo.heldout_path). Distillation without held-out rows is the case whose card failed to render: its
manifest is read from the run folder when the registry has none."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cards"
METHODS = ("sft", "distill", "grpo", "env")


def load(method: str, held_out: bool) -> tuple[dict, dict]:
    """(manifest, summary as RunSummary's fields) of the run of ``method`` with or without held-out data."""
    doc = json.loads((FIXTURES / f"{method}-{'heldout' if held_out else 'none'}.json").read_text(encoding="utf-8"))
    return doc["manifest"], doc["summary"]


def _configs(folder: Path) -> dict[str, tuple[dict, dict]]:
    """Each method's config, and what it changes to hold data out."""
    from support.common import run_cli, short_conversation, write_jsonl
    from support.grpo import prompt_files

    rows = write_jsonl(folder / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(48)])
    prompts = write_jsonl(folder / "prompts.jsonl",
                          [{"id": f"p{i}", "prompt": f"Write add{i}(a, b)."} for i in range(96)])
    train, val = prompt_files(folder)
    built = run_cli("tiny-model", "--data", str(rows), "-o", str(folder / "teacher"), "--family", "qwen3", "--size",
                    "large")
    assert built.returncode == 0, built.stderr[-2000:]
    steps = {"learning_rate": 0.01, "max_steps": 2, "logging_steps": 1, "seed": 1, "warmup_ratio": 0.0}
    chat = {"data": {"path": str(rows)}, "training": {**steps, "per_device_train_batch_size": 8, "max_length": 128}}
    fraction = {"data": {"eval_fraction": 0.25}}
    return {
        "sft": (chat, fraction),
        "distill": ({**chat, "training": {**chat["training"], "method": "distill"}, "distill": {"lmbda": 0.0},
                     "teacher": {"name": str(folder / "teacher")}}, fraction),
        "grpo": ({"data": {"path": str(prompts)},
                  "training": {**steps, "method": "grpo", "per_device_train_batch_size": 8},
                  "grpo": {"rewards": {"length": 1.0}, "length_target": 16, "num_generations": 4,
                           "max_completion_length": 16, "signal_check": False}}, fraction),
        "env": ({"data": {"path": str(train), "format": "prompts"},
                 "environment": {"name": "coding", "max_turns": 2, "tool_budget": 2, "timeout_s": 5},
                 "training": {**steps, "method": "grpo", "per_device_train_batch_size": 4},
                 "grpo": {"num_generations": 4, "max_completion_length": 32, "signal_check": False, "eval_prompts": 4}},
                {"grpo": {"heldout_path": str(val)}}),
    }


def regenerate(folder: Path) -> None:
    import yaml

    from mcp_server.tracking import TrackioStore
    from support.common import run_cli

    base = {"quantization": "none", "model": {"name": "tiny:qwen3"}, "lora": {"r": 8, "alpha": 16, "dropout": 0.0},
            "eval": {"tasks": []}, "tracking": {"project": "card-fixtures"}}
    for method, (config, held) in _configs(folder).items():
        for held_out in (False, True):
            key = f"{method}-{'heldout' if held_out else 'none'}"
            raw = {**base, **config, "output": {"name": f"card-{key}"}}
            for section, values in (held if held_out else {}).items():
                raw[section] = {**raw[section], **values}
            path = folder / f"{key}.yaml"
            path.write_text(yaml.safe_dump(raw))
            done = run_cli("run", str(path), "--json")
            print(key, "exit", done.returncode, done.stderr[-300:] if done.returncode else "", flush=True)
            home = Path(os.environ["TUNEPACK_HOME"])
            found = [p for p in [*home.glob(f"registry/card-{key}/v*/tunepack_manifest.json"),
                                 *home.glob("runs/*/adapter/tunepack_manifest.json")]
                     if json.loads(p.read_text())["config"]["output"]["name"] == f"card-{key}"]
            manifest = json.loads(found[0].read_text())
            summary = TrackioStore(os.environ["TRACKIO_DIR"]).summary("card-fixtures", manifest["run_name"])
            (FIXTURES / f"{key}.json").write_text(
                json.dumps({"manifest": manifest, "summary": summary.model_dump()}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    state = Path(tempfile.mkdtemp(prefix="tunepack-card-fixtures-"))
    os.environ.update(TUNEPACK_HOME=str(state / "home"), TRACKIO_DIR=str(state / "trackio"), HF_DATASETS_OFFLINE="1",
                      TOKENIZERS_PARALLELISM="false", TUNEPACK_DAILY_TOTAL_USD="1000",
                      TUNEPACK_RESOLVE_BEFORE="2026-12-05T00:00:00Z")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    FIXTURES.mkdir(parents=True, exist_ok=True)
    regenerate(state)
