"""Distillation, the second rung: a student learns a teacher's token distributions (TRL's GKD, off-policy,
on-policy or mixed) on the same rows. What it checks before a job: the mode the family can run, the two tokenizers
on the run's rows, the memory of teacher + student on the flavor's GPU (teacher.py, vocab_check.py, memory.py; the
last two travel embedded in templates/distill_train.py.j2)."""

from __future__ import annotations

from pathlib import Path

from ...config import TrainConfig
from ...errors import ConfigError, TunepackError
from ...train.render import EMBEDDED, ScriptParts
from ..base import Check, Method


class Distillation(Method):
    name = "distill"
    template = "distill_train.py.j2"
    embedded = (*EMBEDDED, "methods/distill/vocab_check.py", "methods/distill/memory.py")
    report_key = "distill"
    plan_key = "distill_plan"

    def script_parts(self, cfg: TrainConfig, *, push: dict | None, plan: dict | None) -> ScriptParts:
        """The plan for the job's flavor is embedded (default: no GPU known); one Trackio group per mode, since
        off- and on-policy losses are not on one scale."""
        from .teacher import distill_plan

        plan = plan or distill_plan(cfg, gpu_gb=None, cuda=False, flavor=None)
        parts = super().script_parts(cfg, push=push, plan=plan)
        parts.info.update(trackio_group=f"distill-{plan['mode']}", distill=plan)
        return parts

    def memory_batch(self, cfg: TrainConfig) -> None:
        return None  # teacher + student: distill_plan's own memory quote (memory.py)

    def plan(self, cfg: TrainConfig, backend: str, flavor: str | None) -> dict | None:
        """The mode the family can run, the two tokenizers on the run's rendered rows (here when both are at hand,
        else in the job before any weights load), and the memory plan on the flavor's GPU (refused when teacher +
        student cannot fit, even with a 4-bit teacher)."""
        from ...jobs import flavor_info, gpu_memory_gb
        from ...traces.spine import training_config_or_pending
        from ...train.data import read_local_rows
        from . import teacher as distill

        distill.check_mode(cfg)
        if backend != "local" and cfg.teacher is not None and Path(cfg.teacher.name).exists():
            raise ConfigError(f"teacher.name {cfg.teacher.name} is a folder on this machine, which an HF job cannot "
                              "read.", "push the teacher (or its adapter) to the Hub and set teacher.name to its repo "
                              "id (`tunepack registry push NAME --repo NS/NAME`), or run with the local backend.")
        rows_cfg, pending = training_config_or_pending(cfg)  # sessions on an unreachable Hub: converted in the job
        rows = [] if pending else [row for path in rows_cfg.data.path for row in read_local_rows(path)]
        tokenizers = distill.check_tokenizers(rows_cfg, rows[:distill.TOKENIZER_ROWS], _student_path(rows_cfg)) \
            if rows else {"status": "deferred", "detail": "Hub data: the job's script compares the tokenizers on its rows"}
        hardware = flavor_info(backend, flavor)
        plan = distill.distill_plan(cfg, gpu_gb=gpu_memory_gb(hardware), cuda=bool(hardware.accelerator), flavor=flavor)
        plan["tokenizers"] = tokenizers
        if plan["memory"]["fits"] is False:
            raise ConfigError(f"Teacher and student do not fit one GPU of {flavor}: {plan['memory']['advice']}.",
                              "follow the advice above, then run again (`tunepack preflight CONFIG --flavor F` quotes "
                              "each flavor's memory).")
        return plan

    def preflight(self, cfg: TrainConfig, backend: str, flavor: str | None, checks: list[Check]) -> dict | None:
        try:
            plan = self.plan(cfg, backend, flavor)
        except TunepackError as exc:
            checks.append(Check(name="distillation", status="fail", detail=exc.problem, fix=exc.fix))
            return None
        assert plan is not None
        memory = plan["memory"]
        fits = "" if memory["fits"] is None else \
            f" of {memory['gpu_gb']:g} GB ({'fits' if memory['fits'] else 'does not fit'})"
        checks.append(Check(name="distillation", status="pass", detail=(
            f"{plan['mode']}, {plan['divergence']}; teacher {plan['teacher']['base']} in {memory['teacher']['weights']}; "
            f"memory: teacher {memory['teacher']['gb']} + student {memory['student']['gb']} + logits "
            f"{memory['logits_gb']} = {memory['total_gb']} GB{fits}; tokenizers: {plan['tokenizers']['status']} "
            f"({plan['tokenizers']['detail']}); the smoke run trains the student's path (SFT on its replica)")))
        return plan


def _student_path(cfg: TrainConfig) -> str | None:
    """The student's tokenizer folder: the tiny replica (built here when torch is installed, as the job would)."""
    import importlib.util

    if not cfg.model.is_tiny:
        return None
    from ...traces.spine import training_config
    from ...train.tiny_model import ensure_tiny_model, tiny_model_path

    path = tiny_model_path(cfg)
    if not (path / "config.json").is_file() and importlib.util.find_spec("torch") is not None:
        ensure_tiny_model(training_config(cfg))
    return str(path) if (path / "config.json").is_file() else None


DISTILL = Distillation()
