"""GRPO inside an environment, the fourth rung: each rollout works in tunepack's coding environment (the eval kit's
coding_env.py: a sandboxed Python session, its tools, the hidden tests as the reward), TRL's environment_factory
over templates/grpo_env_train.py.j2; trajectories.py writes scripted episodes for a warm start. It is GRPO in all
else (its checks, plan, rows and smoke run)."""

from __future__ import annotations

from ...config import TrainConfig
from ...train.render import ScriptParts
from ..grpo import Grpo

OPENENV_PIN = "openenv-core==0.3.0"  # the client and server of environment: openenv (the extra `env`)


class EnvironmentGrpo(Grpo):
    name = "grpo-env"
    template = "grpo_env_train.py.j2"

    def script_parts(self, cfg: TrainConfig, *, push: dict | None, plan: dict | None) -> ScriptParts:
        """GRPO's parts; an OpenEnv environment adds its package to the script's dependencies."""
        parts = super().script_parts(cfg, push=push, plan=plan)
        if cfg.environment is not None and cfg.environment.name == "openenv":
            parts.extra_pins = (*parts.extra_pins, OPENENV_PIN)
        return parts

    def selection_metric(self, cfg: TrainConfig) -> str:
        """The held-out problems through the same loop (eval/env_reward), else the training reward."""
        return "eval/env_reward" if (cfg.data.held_out or cfg.grpo.heldout_path) else "reward"


ENV_GRPO = EnvironmentGrpo()
