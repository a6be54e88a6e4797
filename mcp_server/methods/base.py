"""What every training method answers for the shared machinery (render, preflight, run, sweeps), so that the shared
modules ask the method instead of branching on its name. The defaults are SFT's; distillation, GRPO and GRPO inside
an environment override what differs, each in its own place (methods/distill, methods/grpo, methods/env).

    method = method_of(cfg)                       # methods/__init__.py
    parts = method.script_parts(cfg, push=None, plan=None)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from ..config import TrainConfig
from ..config.methods import GrpoSection
from ..errors import DataError
from ..train.memory import Batch
from ..train.render import EMBEDDED, ScriptParts
from ..train.start import start_adapter


class Check(BaseModel):
    """One line of a preflight report."""

    name: str
    status: Literal["pass", "fail", "pending", "skipped"]
    detail: str
    fix: str | None = None


class Method:
    """A training method: its script (template and embedded helpers), what it checks before a job, how its smoke run
    is cut down and which metric its sweeps select on."""

    name = "sft"
    template = "sft_train.py.j2"
    embedded: tuple[str, ...] = EMBEDDED
    check_args: tuple[str, ...] = ("--check-only",)  # what the preflight job runs the real config's script with
    check_label = "mask check with the real tokenizer"
    rl = False  # has an RL check that needs the real model (GRPO: `tunepack rl-check`)
    report_key: str | None = None  # the preflight report's section for the method's own checks
    plan_key: str | None = None  # the name `tunepack render` prints the method's plan under

    def script_parts(self, cfg: TrainConfig, *, push: dict | None, plan: dict | None) -> ScriptParts:
        """The script's template, embedded helpers and extra render facts (a starting adapter for every method)."""
        return ScriptParts(self.template, self.embedded, info={"start": start_adapter(cfg, remote=bool(push))})

    def plan(self, cfg: TrainConfig, backend: str, flavor: str | None) -> dict | None:
        """The method's plan for a job on the flavor, refused here when it cannot run (None: nothing to plan)."""
        return None

    def preflight(self, cfg: TrainConfig, backend: str, flavor: str | None, checks: list[Check]) -> dict | None:
        """The method's own checks before any money is spent, appended to ``checks``; their facts for the report."""
        return None

    def memory_batch(self, cfg: TrainConfig) -> Batch | None:
        """What one micro-batch holds on the device, for the memory plan (None: the method plans its own)."""
        return Batch(sequences=cfg.training.per_device_train_batch_size, length=cfg.training.max_length)

    def memory(self, cfg: TrainConfig, backend: str, flavor: str | None, checks: list[Check] | None = None
               ) -> dict | None:
        """The memory plan on one GPU of the flavor (train/memory.py); with ``checks``, a line that fails when the
        plan does not fit. Local: this machine's first GPU when torch sees one, else the CPU (quoted, not judged)."""
        from ..jobs import flavor_info, gpu_memory_gb
        from ..train.memory import memory_plan, plan_line

        batch = self.memory_batch(cfg)
        if batch is None:
            return None
        ram_gb = None
        if backend == "local":
            gpu_gb = _local_gpu_gb()
            cuda = gpu_gb is not None
            ram_gb = _ram_gb()
        else:
            hardware = flavor_info(backend, flavor)
            gpu_gb, cuda = gpu_memory_gb(hardware), bool(hardware.accelerator)
        plan = memory_plan(cfg, gpu_gb=gpu_gb, cuda=cuda, batch=batch, ram_gb=ram_gb)
        if checks is not None:
            fits = plan["fits"] is not False
            checks.append(Check(name="memory", status="pass" if fits else "fail", detail=plan_line(plan),
                                fix=None if fits else plan["advice"]))
        return plan

    def check_rows(self, cfg: TrainConfig, rows: list[dict]) -> None:
        """Training rows before any job: each must have an assistant turn to train on."""
        from ..train.maskcheck import MaskCheckError, detect_format, rows_without_assistant

        try:
            fmt = cfg.data.format if cfg.data.format != "auto" else detect_format(rows[0].keys(),
                                                                                  cfg.data.messages_column)
            missing = rows_without_assistant(rows, fmt, cfg.data.messages_column, cfg.data.tools_column)
        except MaskCheckError as exc:
            raise DataError(exc.problem, exc.fix) from None
        if missing:
            shown = ", ".join(map(str, missing[:20])) + (" …" if len(missing) > 20 else "")
            raise DataError(
                f"{len(missing)} of {len(rows)} rows have no assistant turn to train on (row indices: {shown}).",
                "drop those rows or give each an assistant message with content or tool_calls.",
            )

    def rows_line(self, rows: int) -> str:
        return f"{rows} rows, each with an assistant turn"

    def smoke(self, cfg: TrainConfig) -> dict[str, Any]:
        """How the preflight's smoke run (a few steps on the family's replica) differs from the run: SFT's path."""
        return {"training": {"method": "sft"}, "grpo": GrpoSection()}

    def selection_metric(self, cfg: TrainConfig) -> str:
        """What a sweep of this method ranks its runs on when the spec names no metric."""
        return "eval_loss" if (cfg.data.held_out or cfg.data.eval_split) else "loss"


def _ram_gb() -> float | None:
    """This machine's memory in GB (None where the OS does not say)."""
    import os

    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _local_gpu_gb() -> float | None:
    """This machine's first NVIDIA GPU in GB, None without one. Asked of nvidia-smi, not torch: the MCP server
    never imports torch (seconds) for a preflight or a run."""
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        done = subprocess.run([smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"], capture_output=True,
                              text=True, timeout=10)
        return round(float(done.stdout.split()[0]) / 1024, 1) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
