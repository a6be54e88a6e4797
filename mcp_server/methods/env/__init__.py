"""GRPO inside an environment, the fourth rung: each rollout works in tunepack's coding environment (the eval kit's
coding_env.py: a sandboxed Python session, its tools, the hidden tests as the reward), TRL's environment_factory
over templates/grpo_env_train.py.j2; trajectories.py writes scripted episodes for a warm start. It is GRPO in all
else (its checks, plan, rows and smoke run)."""

from __future__ import annotations

from ...config import TrainConfig
from ..grpo import Grpo


class EnvironmentGrpo(Grpo):
    name = "grpo-env"
    template = "grpo_env_train.py.j2"

    def selection_metric(self, cfg: TrainConfig) -> str:
        """The held-out problems through the same loop (eval/env_reward), else the training reward."""
        return "eval/env_reward" if (cfg.data.held_out or cfg.grpo.heldout_path) else "reward"


ENV_GRPO = EnvironmentGrpo()
