"""Shared helpers of the sweep tests: tiny base configs, unique ledger projects, and waiting on a sweep."""

from __future__ import annotations

import time
import uuid

from mcp_server.sweeps import read_state, sweep_dir


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def tiny_base(data, project: str, **training) -> dict:
    """The tiny CPU config of tests/test_server.py's tiny_config: ≤ 20 steps, ≤ 128 tokens."""
    return {"model": {"name": "tiny:qwen3"}, "data": {"path": str(data)},
            "training": {"max_length": 128, "max_steps": 8, "logging_steps": 1, "learning_rate": 0.005,
                         "per_device_train_batch_size": 4, "gradient_checkpointing": False, **training},
            "tracking": {"project": project}, "output": {"name": project}}


def hub_base(data, project: str) -> dict:
    return {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(data)}, "training": {"max_steps": 20},
            "tracking": {"project": project}, "output": {"name": project}}


def wait_for(sweep_id: str, done=lambda s: s.status not in ("starting", "running"), timeout: float = 240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = read_state(sweep_dir(sweep_id))
        if done(state):
            return state
        time.sleep(0.5)
    raise AssertionError(f"sweep {sweep_id} did not get there in {timeout} s: "
                         f"{read_state(sweep_dir(sweep_id)).model_dump_json(indent=1)[-3000:]}")
