"""The continual-learning loop's world, shared by its local twin (test_loop.py) and its HF Jobs run
(test_loop_remote.py): Pi sessions arriving between cycles, a retention set no cycle sees, a tiny training config."""

from __future__ import annotations

import json

import yaml

from support.tutorial import pi_session


def arrive(folder, first: int, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + count):
        (folder / f"session-{i:02d}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in pi_session(i)))


def retention_set(folder) -> None:
    """The retention set: sessions of the same work that no cycle sees (numbers 100-103), converted once."""
    from mcp_server.traces import ConvertOptions, convert

    arrive(folder / "general-sessions", 100, 4)
    convert([folder / "general-sessions"], folder / "general.jsonl", ConvertOptions())


def train_config(path, **training) -> None:
    raw = {"model": {"name": "tiny:qwen3"}, "data": {"path": "sessions"},
           "training": {"max_length": 384, "max_steps": 8, "logging_steps": 2, "learning_rate": 0.005,
                        "per_device_train_batch_size": 2, "gradient_checkpointing": False, "seed": 3, **training},
           "tracking": {"project": "loop-twin"}, "job": {"backend": "local"}}
    path.write_text(yaml.safe_dump(raw))
