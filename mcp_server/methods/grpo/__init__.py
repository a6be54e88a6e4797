"""GRPO with verifiable rewards, the third rung: prompt-only rows, completions sampled in groups and scored by
weighted rewards (plan.py: rewards, monitors, sizing, the generation path; rewards.py: the built-in rewards, embedded
in templates/grpo_train.py.j2; prompts.py: MBPP's splits, the ceiling, agent-turn prompts; check.py: the RL
preflight)."""

from __future__ import annotations

from typing import Any

from ...config import TrainConfig
from ...errors import ConfigError
from ...resources import VLLM_FOR_TRL
from ...train.memory import Batch
from ...train.render import EMBEDDED, ScriptParts
from ..base import Check, Method


class Grpo(Method):
    name = "grpo"
    template = "grpo_train.py.j2"
    embedded = (*EMBEDDED, "methods/grpo/rewards.py")
    check_args = ("--rl-check",)
    check_label = "the RL check with the real model (ceiling, sizing, the starting model's groups: TUNEPACK_RLCHECK)"
    rl = True
    report_key = "grpo"
    plan_key = "grpo_plan"

    def script_parts(self, cfg: TrainConfig, *, push: dict | None, plan: dict | None) -> ScriptParts:
        """The eval kit's sources when a reward or monitor runs code (the sandbox), the reward files' sources and
        hashes, the monitors; vLLM pins its own torch, so the resolver picks both."""
        from .plan import config_monitors, needs_kit, reward_hashes, reward_sources

        parts = super().script_parts(cfg, push=push, plan=plan)
        monitored = config_monitors(cfg)
        parts.reward_files = reward_sources(cfg)
        parts.info["grpo"] = {"monitor": monitored, "reward_files": reward_hashes(parts.reward_files, cfg)}
        if needs_kit(cfg, monitored):
            from ...evals.render import kit_sources

            parts.kit = kit_sources()
        if cfg.grpo.generation == "vllm":  # vLLM brings its own torch, within the range the pinned TRL supports
            parts.unpinned, parts.extra_pins = ("torch==", "bitsandbytes=="), (VLLM_FOR_TRL,)
        return parts

    def memory_batch(self, cfg: TrainConfig) -> Batch:
        """A micro-batch is per_device_train_batch_size completions of prompt (≤ training.max_length) + completion
        tokens; TRL generates the whole step's completions at once (batch x accumulation), each with its KV cache."""
        t = cfg.training
        return Batch(sequences=t.per_device_train_batch_size, length=t.max_length + cfg.grpo.max_completion_length,
                     generated=t.per_device_train_batch_size * t.gradient_accumulation_steps)

    def plan(self, cfg: TrainConfig, backend: str, flavor: str | None) -> dict | None:
        """The GPU plan on a flavor (generation path, precision, sizing); vLLM with 4-bit weights is refused."""
        if not flavor:
            return None
        from .check import flavor_plan

        plan = flavor_plan(cfg, backend, flavor)
        if plan["generation"]["error"]:
            raise ConfigError(*plan["generation"]["error"])
        return plan

    def preflight(self, cfg: TrainConfig, backend: str, flavor: str | None, checks: list[Check]) -> dict | None:
        from .check import grpo_preflight

        return grpo_preflight(cfg, backend, flavor, checks)

    def check_rows(self, cfg: TrainConfig, rows: list[dict]) -> None:
        from .plan import check_prompt_rows

        check_prompt_rows(cfg, rows)

    def rows_line(self, rows: int) -> str:
        return f"{rows} prompt rows (GRPO: the completions are the model's)"

    def smoke(self, cfg: TrainConfig) -> dict[str, Any]:
        """GRPO keeps its method: a group of one prompt per step, short completions, no held-out curve (the real
        check ran the signal)."""
        return {"training": {"method": "grpo", "per_device_train_batch_size": cfg.grpo.num_generations,
                             "gradient_accumulation_steps": 1},
                "grpo": cfg.grpo.model_copy(update={
                    "heldout_path": None, "signal_check": False, "ceiling_check": False, "stop_on_hacking": False,
                    "max_completion_length": min(cfg.grpo.max_completion_length, 32)})}

    def selection_metric(self, cfg: TrainConfig) -> str:
        """The held-out reward curve, when there is one."""
        return "eval/reward" if (cfg.data.held_out or cfg.grpo.heldout_path) else "reward"


GRPO = Grpo()
