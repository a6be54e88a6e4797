"""Methods room: one place per way of training — SFT (sft.py), distillation (distill/), GRPO (grpo/), GRPO inside an
environment (env/), DPO (dpo/) — over the shared script machinery of train/ (render, the embedded helpers). The shared modules
(pipeline, sweeps, the faces) ask ``method_of(cfg)`` what differs instead of branching on the method's name.

    write_script(cfg, "train.py")            # the config's method renders its own script
    method_of(cfg).preflight(cfg, "hf", "a10g-large", checks)
"""

from __future__ import annotations

from pathlib import Path

from ..config import TrainConfig
from ..staging import write_text_atomically
from ..train.render import render
from .base import Check, Method
from .distill import DISTILL
from .dpo import DPO
from .env import ENV_GRPO
from .grpo import GRPO
from .sft import SFT

METHODS: dict[str, Method] = {m.name: m for m in (SFT, DISTILL, GRPO, ENV_GRPO, DPO)}


def method_of(cfg: TrainConfig) -> Method:
    """The config's method: training.method, and GRPO inside an environment is its own (grpo-env)."""
    return METHODS[f"{cfg.training.method}-env" if cfg.environment is not None else cfg.training.method]


def render_script(cfg: TrainConfig, *, model_path: str | None = None, run_name: str | None = None,
                  push: dict | None = None, mounts: dict | None = None, cache_bucket: str | None = None,
                  plan: dict | None = None, group: str | None = None, memory: dict | None = None) -> str:
    """The script text (see ``train.render.render``); ``plan``: the method's plan for the job's flavor
    (distillation embeds it; default: planned without a GPU); ``memory``: the memory plan, for the manifest."""
    from ..traces.spine import provenance

    parts = method_of(cfg).script_parts(cfg, push=push, plan=plan)
    if memory is not None:
        parts.info["memory"] = memory
    return render(cfg, parts, model_path=model_path, run_name=run_name, push=push, mounts=mounts,
                  cache_bucket=cache_bucket, traces=provenance(cfg), group=group)


def write_script(cfg: TrainConfig, out: str | Path, **options) -> Path:
    """Write the script atomically (a crash never leaves half a script behind); options as ``render_script``."""
    text = render_script(cfg, **options)
    return write_text_atomically(Path(out), text)


__all__ = ["Check", "METHODS", "Method", "method_of", "render_script", "write_script"]
