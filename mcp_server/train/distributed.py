"""Several training processes: how a config's ``distributed`` section becomes a launch.

One process per GPU. ``ddp`` runs under ``torchrun`` (on CPU with the gloo backend, which is how the
tests run it); ``fsdp`` (FSDP2), ``fsdp1`` and ``zero1``/``zero2``/``zero3`` (DeepSpeed ZeRO) run under
``accelerate launch --config_file`` with TRL's own accelerate configs (``accelerate_configs.yaml``, a
verbatim copy of ``trl/accelerate_configs/*.yaml``) with ``num_processes`` and ``mixed_precision`` set
per run. The rendered script launches itself: started once (``python train.py``, ``uv run train.py``,
an HF Job), it re-runs its own file under the launcher, and only rank 0 logs, tracks and writes.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from pathlib import Path

import yaml

from ..config import TrainConfig
from ..errors import ConfigError

HERE = Path(__file__).resolve().parent
CONFIGS_FILE = HERE / "accelerate_configs.yaml"
# strategy -> TRL's accelerate config name
TRL_CONFIG = {"ddp": "multi_gpu", "fsdp": "fsdp2", "fsdp1": "fsdp1", "zero1": "zero1", "zero2": "zero2",
              "zero3": "zero3"}
SHARDED = ("fsdp", "fsdp1", "zero3")  # strategies that shard the weights (4-bit storage must be the compute dtype)
DEEPSPEED_PIN = "deepspeed>=0.16"


@lru_cache(maxsize=1)
def trl_accelerate_configs() -> dict[str, dict]:
    return yaml.safe_load(CONFIGS_FILE.read_text(encoding="utf-8"))


def accelerate_config(strategy: str, processes: int, mixed_precision: str = "bf16") -> dict:
    """TRL's accelerate config for a strategy, with this run's process count and precision."""
    try:
        base = trl_accelerate_configs()[TRL_CONFIG[strategy]]
    except KeyError:
        raise ConfigError(f"distributed.strategy '{strategy}' is not known.",
                          f"use one of: {', '.join(TRL_CONFIG)}.") from None
    out = copy.deepcopy(base)
    out["num_processes"] = processes
    out["mixed_precision"] = mixed_precision
    return out


def launcher_of(cfg: TrainConfig) -> str | None:
    """'torchrun', 'accelerate', or None for a single plain process."""
    dist = cfg.distributed
    if dist.processes <= 1 and dist.strategy == "ddp":
        return None
    if dist.launcher != "auto":
        return dist.launcher
    return "torchrun" if dist.strategy == "ddp" else "accelerate"


def launch_plan(cfg: TrainConfig) -> dict | None:
    """What the rendered script needs to launch itself (embedded in RENDER_INFO), or None."""
    launcher = launcher_of(cfg)
    if launcher is None:
        return None
    dist = cfg.distributed
    return {"processes": dist.processes, "strategy": dist.strategy, "launcher": launcher,
            "sharded": dist.strategy in SHARDED,
            "accelerate_config": accelerate_config(dist.strategy, dist.processes) if launcher == "accelerate" else None}


def launch_command(cfg: TrainConfig, script: str = "train.py", config_file: str = "accelerate_config.json") -> list[str]:
    """The command line the script runs for itself (shown in plans and docs; the script builds the same)."""
    plan = launch_plan(cfg)
    if plan is None:
        return ["python", script]
    if plan["launcher"] == "torchrun":
        return ["torchrun", "--standalone", "--nproc_per_node", str(plan["processes"]), script]
    return ["accelerate", "launch", "--config_file", config_file, "--num_processes", str(plan["processes"]), script]


def extra_dependencies(cfg: TrainConfig) -> list[str]:
    """PEP 723 dependencies beyond the pins: DeepSpeed for the ZeRO strategies."""
    return [DEEPSPEED_PIN] if launcher_of(cfg) == "accelerate" and cfg.distributed.strategy.startswith("zero") else []


def gpus_of(accelerator: str | None) -> int:
    """4 for '4x A100', 0 for a CPU flavor."""
    if not accelerator:
        return 0
    match = re.match(r"\s*(\d+)\s*x", accelerator)
    return int(match.group(1)) if match else 1


def check_placement(cfg: TrainConfig, backend: str, flavor: str | None) -> None:
    """Refuse a process count the hardware cannot hold (one process per GPU on HF Jobs)."""
    dist = cfg.distributed
    if launcher_of(cfg) is None or backend != "hf":
        return
    from ..jobs import flavor_info, hf_flavors

    hw = flavor_info(backend, flavor)
    gpus = gpus_of(hw.accelerator)
    if gpus < dist.processes:
        multi = ", ".join(h.name for h in hf_flavors() if gpus_of(h.accelerator) >= dist.processes) or "none"
        raise ConfigError(
            f"distributed.processes={dist.processes} needs {dist.processes} GPUs, but flavor '{hw.name}' has "
            f"{gpus or 'no'} GPU{'s' if gpus != 1 else ''}.",
            f"pick a flavor with at least {dist.processes} GPUs ({multi}) or lower distributed.processes.")
