"""A GRPO run's rollouts folder without the GRPO run: the coding environment's scripted episodes (the real
sandbox, tools and hidden tests) of two policies on the same problems, saved as the environment's training
rollouts are (rollouts/train/step-N/*.jsonl, Pi sessions with the reward and the verdict). ``reference`` runs the
reference solution and passes; ``no-code`` answers in text and fails."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_server.evals.kit.agent_loop import tool_schemas
from mcp_server.evals.kit.coding_env import CodingEnv
from mcp_server.evals.kit.rollouts import write_rollout
from mcp_server.evals.kit.sandbox import Sandbox
from mcp_server.methods.env.trajectories import scripted_episode

from .grpo import prompt_files


def env_rollouts(folder: Path, problems: int = 24) -> Path:
    """The output folder of a pretend GRPO run (it holds rollouts/): per problem one passing and one failing
    rollout, plus one held-out rollout that must never become a pair."""
    train, _ = prompt_files(folder, train=problems, validation=4)
    rows = [json.loads(line) for line in train.read_text().splitlines()]
    run_dir = folder / "grpo-run"
    box = Sandbox("auto", workers=2).start()
    previous = (CodingEnv.box, CodingEnv.timeout_s)
    CodingEnv.box, CodingEnv.timeout_s = box, 5.0
    try:
        for step, policy in ((1, "reference"), (2, "no-code")):
            for k, row in enumerate(rows):
                episode = scripted_episode(row, policy)
                meta = {"problem": episode["id"], "split": "train", "step": step, "index": k,
                        "reward": episode["reward"], "verified": episode["env"]["verified"]}
                write_rollout(run_dir / "rollouts" / "train" / f"step-{step:05d}", episode["messages"], tool_schemas(),
                              meta)
        held = scripted_episode(rows[0], "reference")
        write_rollout(run_dir / "rollouts" / "eval" / "step-00002", held["messages"], tool_schemas(),
                      {"problem": held["id"], "split": "eval", "step": 2, "index": 0, "reward": held["reward"],
                       "verified": held["env"]["verified"]})
    finally:
        CodingEnv.box, CodingEnv.timeout_s = previous
        box.close()
    return run_dir
