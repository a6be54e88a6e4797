"""The ladder's CPU twin: examples/ladder/*.yaml turned into tiny:qwen3 runs on local files (the MBPP-shaped problems
of support/grpo.py), small enough for CI.

Rung 1 trains on agent traces of the coding environment (scripted episodes: run the reference, run the test,
answer) plus plain coding answers, so the replica both calls the tools and writes code; 100 steps, because 60 leave
it writing no call the parser reads. The later rungs train the registered adapter further at a tenth of that
learning rate or less: at the first rung's rate one GRPO step took the replica from 7 of 8 rollouts reaching the
environment to 0 (pitfall P-007)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .common import REPO, run_cli, write_jsonl
from .grpo import prompt_files, sft_rows

EXAMPLES = REPO / "examples" / "ladder"
TASKS = ["next-action", "bfcl:simple_python", "humaneval", "mbpp", "mbpp-agent"]


def ladder_data(folder: Path) -> dict[str, Path]:
    """The problems (train, validation and test splits), the GRPO prompt files and rung 1's rows."""
    train, val = prompt_files(folder, test=8)
    done = run_cli("env-trajectories", str(train), "-o", str(folder / "episodes.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    episodes = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    code = [json.loads(line) for line in sft_rows(train, folder).read_text().splitlines()]
    rows = [{"messages": r["messages"], "tools": r["tools"]} for r in episodes] + [{**r, "tools": []} for r in code]
    return {"train": train, "val": val, "mbpp": folder / "mbpp.jsonl",
            "rung1": write_jsonl(folder / "rung1.jsonl", rows)}


def _twin(name: str, project: str, changes: dict) -> dict:
    raw = yaml.safe_load((EXAMPLES / name).read_text())
    raw.pop("job", None)
    model = {**raw["model"], "name": "tiny:qwen3"}
    if model.get("adapter"):
        model["adapter"] = f"{project}-{model['adapter'].rsplit('-', 1)[1]}"
    out = {**raw, "model": model, "quantization": "none", "tracking": {"project": project},
           "output": {"name": f"{project}-{raw['output']['name'].rsplit('-', 1)[1]}"}, "eval": {"tasks": []}}
    for key, value in changes.items():
        out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) and key != "data" else value
    return out


def rung_configs(folder: Path, files: dict[str, Path], project: str) -> dict[str, Path]:
    """Rungs 1-3 as config files (rung 4's data are rung 3's rollouts: ``verified_config`` writes it later)."""
    small = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "seed": 0, "warmup_ratio": 0.0}
    grpo = {"num_generations": 4, "temperature": 0.3, "heldout_path": str(files["val"]), "eval_steps": 2,
            "eval_prompts": 8, "signal_prompts": 4}
    configs = {
        "sft": _twin("1-sft.yaml", project, {
            "data": {"path": str(files["rung1"]), "eval_fraction": 0.05},
            "lora": {"r": 32, "alpha": 64, "dropout": 0.0, "target_modules": "all-linear"},
            "training": {**small, "learning_rate": 0.01, "max_steps": 100, "max_length": 1024, "logging_steps": 20}}),
        "grpo": _twin("2-grpo.yaml", project, {
            "data": {"path": str(files["train"]), "format": "prompts"},
            "training": {**small, "method": "grpo", "learning_rate": 0.0002, "max_steps": 4, "logging_steps": 1},
            "grpo": {**grpo, "rewards": {"tests": 1.0}, "max_completion_length": 64}}),
        "env": _twin("3-env-grpo.yaml", project, {
            "data": {"path": str(files["train"]), "format": "prompts"},
            "training": {**small, "method": "grpo", "learning_rate": 0.0002, "max_steps": 4, "logging_steps": 1},
            "grpo": {**grpo, "max_completion_length": 256}}),
    }
    return {rung: _write(folder / f"{rung}.yaml", raw) for rung, raw in configs.items()}


def verified_config(folder: Path, rollouts: Path, project: str) -> Path:
    small = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "seed": 0, "warmup_ratio": 0.0}
    raw = _twin("4-verified-sft.yaml", project, {
        "data": {"path": str(rollouts), "format": "traces", "traces": {"only_verified": True, "per_problem": 4}},
        "training": {**small, "learning_rate": 0.0001, "max_steps": 10, "max_length": 1024, "logging_steps": 5}})
    return _write(folder / "verified.yaml", raw)


def eval_section(files: dict[str, Path]) -> dict:
    """The same benchmarks for every rung, cut to 4 problems each (the test split of the twin has 8); the starting
    adapter is a row of the ladder's table already, so no eval scores it again."""
    return {"tasks": TASKS, "limit": 4, "max_tokens": 256, "mbpp_source": str(files["mbpp"]), "sandbox": "auto",
            "backend": "hf", "references": False}


def _write(path: Path, raw: dict) -> Path:
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path
