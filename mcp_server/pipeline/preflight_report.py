"""What a preflight answers: its report, and the shape of one failed check (shared by the local half, preflight.py,
and the HF half, preflight_remote.py)."""

from __future__ import annotations

from pydantic import BaseModel

from ..errors import TunepackError
from ..jobs import CostEstimate, JobInfo
from .records import Check


class PreflightReport(BaseModel):
    ok: bool
    checks: list[Check]
    cost: CostEstimate | None = None
    smoke_job: JobInfo | None = None
    remote_job: JobInfo | None = None  # backend hf: the mask check as an HF job on cpu-basic
    heldout: dict | None = None  # the held-out sessions: names, turns, tool-call turns, tools (before any training)
    eval_time: dict | None = None  # eval.tasks: each task's items and expected seconds on this backend, vs the timeout
    job_env: dict | None = None  # backend hf: the run script's header resolved for the job (versions, or why not)
    memory: dict | None = None  # SFT/GRPO: weights, LoRA + optimizer, activations, logits on one GPU of the flavor
    distill: dict | None = None  # training.method distill: mode, divergence, teacher, tokenizers, memory quote
    grpo: dict | None = None  # training.method grpo: rewards, monitors, sizing, generation path, start, ceiling
    approval: dict | None = None  # GRPO on a paid flavor, not yet approved: the decision (quote, approval_token)
    next_step: str


RETRY = "fix the failed check and run preflight again"


def fail_check(name: str, exc: TunepackError) -> Check:
    return Check(name=name, status="fail", detail=exc.problem, fix=exc.fix)


