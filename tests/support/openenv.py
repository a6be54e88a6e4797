"""The count environment's chain on the tiny Qwen3 replica, as a user runs it: scripted episodes through the real
OpenEnv server (`tunepack env-trajectories --openenv`: each task once with its right count and once with the other
of 2 and 4, so the warm start teaches the call's shape, not an answer), an SFT warm start on them, then GRPO from
that adapter against a server `tunepack run` starts itself.

The numbers were measured, not guessed. The replica's logits are small (tied embeddings of norm about 0.8 against
a normed hidden state), so it only writes the call's ~25 tokens in order when sampling is sharpened. With LoRA r 64,
alpha 256 and a constant learning rate of 0.004, 20 SFT steps leave it on the edge (on 2 of 4 seeds it writes
'<think>' where '<tool_call>' belongs); 30 make it call the tool in 38-40 of 40 samples at temperature 0.3 on every
seed tried. At 0.3 its count is nearly fixed, though (the same digit in 37-40 of 40 samples, whatever the seed),
so no task would see both answers: the rollouts sample at 0.5, where it calls the tool in about 3 of 4 samples
and both tasks this run draws get verified and failed rollouts (5 DPO pairs).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .common import REPO, run_cli, write_jsonl
from .sweeps import unique

EXAMPLE = REPO / "examples" / "openenv"
# every count is 2 or 4, alternating, and each script's wrong count is the other one: the warm replica cannot count
# (it learns the call's shape, not the word), so on every task one of its two answers is right and the other wrong
WORDS = [("banana", "n"), ("mississippi", "s"), ("apple", "p"), ("referee", "e"), ("cherry", "r"), ("tennessee", "e"),
         ("letter", "t"), ("possess", "s"), ("coffee", "f"), ("seventeen", "e"), ("committee", "m"), ("assess", "s")]
# 30, past the suite's 20-step rule, measured: 20 steps (batch 12, lr 0.004 or 0.006) left the replica calling the
# tool in 2 of 24 GRPO rollouts, on the edge; 30 steps (batch 8) calls it in 11 of 24 on every seed tried. The 30
# steps train in about 3 s; the run's cost is its start-up.
WARM_STEPS = 30
STEPS, GENERATIONS = 2, 8  # GRPO: one task per step, 8 rollouts of it


def task_rows(folder: Path) -> list[dict]:
    """The tasks: 10 to train on (train.jsonl), 2 held out (val.jsonl)."""
    rows = [{"id": f"count/{i}", "prompt": f"How many '{c}' are in '{w}'?", "word": w, "letter": c}
            for i, (w, c) in enumerate(WORDS)]
    write_jsonl(folder / "train.jsonl", rows[:10])
    write_jsonl(folder / "val.jsonl", rows[10:])
    return rows


def openenv_config(folder: Path, **environment) -> dict:
    """GRPO on the count environment: 2 steps of 4 completions of one task, the server started by the run."""
    task_rows(folder)
    env = {"name": "openenv", "env": "count_env:CountEnvironment", "env_path": str(EXAMPLE), "max_sessions": 4,
           "max_turns": 2, "tool_budget": 2, **environment}
    return {"model": {"name": "tiny:qwen3"}, "quantization": "none", "data": {"path": str(folder / "train.jsonl")},
            "environment": env,
            "training": {"method": "grpo", "max_steps": 2, "per_device_train_batch_size": 4, "logging_steps": 1,
                         "learning_rate": 0.01},
            "grpo": {"num_generations": 4, "max_completion_length": 24, "heldout_path": str(folder / "val.jsonl"),
                     "signal_check": False},
            "tracking": {"project": "openenv-e2e"}, "output": {"name": "openenv-count"}, "eval": {"tasks": []}}


def _run(path: Path, raw: dict) -> dict:
    path.write_text(yaml.safe_dump(raw))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def warm_chain(folder: Path, base_url: str) -> dict:
    """Scripted episodes (through the server at base_url) → SFT warm start → GRPO from it; what each step gave."""
    tasks = task_rows(folder)[:10]
    truth = [t["word"].count(t["letter"]) for t in tasks]
    assert set(truth) == {2, 4}
    scripts = [{**t, "actions": [{"count": n}], "answer": str(n)} for t, right in zip(tasks, truth, strict=True)
               for n in (right, 6 - right)]
    write_jsonl(folder / "scripts.jsonl", scripts)
    done = run_cli("env-trajectories", str(folder / "scripts.jsonl"), "-o", str(folder / "warm.jsonl"),
                   "--openenv", base_url)
    assert done.returncode == 0, done.stderr[-2000:]
    episodes = json.loads(done.stdout)
    warm_name = unique("openenv-warm")
    sft = _run(folder / "sft.yaml", {
        "model": {"name": "tiny:qwen3"}, "quantization": "none", "data": {"path": str(folder / "warm.jsonl")},
        "lora": {"r": 64, "alpha": 256, "dropout": 0.0, "target_modules": "all-linear"},
        "training": {"max_steps": WARM_STEPS, "per_device_train_batch_size": 8, "learning_rate": 0.004,
                     "lr_scheduler_type": "constant", "warmup_ratio": 0.0, "packing": False, "max_length": 512,
                     "logging_steps": 10, "seed": 0},
        "tracking": {"project": "openenv-e2e"}, "output": {"name": warm_name}, "eval": {"tasks": []}})
    raw = openenv_config(folder)
    raw["model"]["adapter"] = warm_name
    raw["training"]["learning_rate"] = 0.0005  # the warm start's calls survive GRPO's steps (pitfall P-007)
    raw["training"]["per_device_train_batch_size"] = GENERATIONS
    raw["environment"]["max_sessions"] = GENERATIONS
    raw["grpo"] |= {"temperature": 0.5, "max_completion_length": 64, "num_generations": GENERATIONS}
    raw["output"]["name"] = unique("openenv-count")
    grpo = _run(folder / "grpo.yaml", raw)
    adapter = Path(grpo["adapter_path"])
    return {"folder": folder, "episodes": episodes, "sft": sft, "grpo": grpo, "adapter": adapter,
            "manifest": json.loads((adapter / "tunepack_manifest.json").read_text())}
