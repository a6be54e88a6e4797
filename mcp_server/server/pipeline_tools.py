"""MCP tools of the pipeline room: validate, render, preflight, run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, NamedTuple

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

from ..approval import Decision, Spend
from ..config import TrainConfig, load_config
from ..errors import ConfigError, TunepackError
from ..jobs import CostEstimate, JobInfo, estimate
from ..methods import write_script
from ..pipeline import PreflightReport, placement, preflight, start_pipeline
from ..train.render import config_hash, pins, run_name_for
from ..train.tiny_model import tiny_model_path
from .common import (
    Approval,
    ApprovalToken,
    ConfigPath,
    Flavor,
    Force,
    OptBackend,
    TimeoutS,
    can_elicit,
    consent_from,
    guarded,
)


class ValidateResult(BaseModel):
    ok: bool
    config: dict
    registry_name: str
    run_name_base: str
    config_hash: str


class RenderResult(BaseModel):
    script_path: str
    run_name: str
    config_hash: str
    pins: list[str]
    how_to_run: str


class SpendResult(BaseModel):
    status: str = Field(description="submitted | approval_required")
    decision: Decision
    cost: CostEstimate
    job: JobInfo | None = None
    run_name: str | None = None
    next_step: str


def spend_result(outcome: Spend, run_name: str | None = None, next_step: str | None = None) -> SpendResult:
    """What a tool that may spend answers: the job, or the quote with what the human must approve."""
    if outcome.job is None:
        return SpendResult(status="approval_required", decision=outcome.decision, cost=outcome.cost,
                           next_step=outcome.decision.message)
    return SpendResult(status="submitted", decision=outcome.decision, cost=outcome.cost, job=outcome.job,
                       run_name=run_name, next_step=next_step or f"follow it with jobs_wait(job_id='{outcome.job.id}')")


class Placed(NamedTuple):
    """A config read once per call (shared by the approval question and the tool body), with the job placement:
    the call's values, else the config's `job` section, else local. ``error``: why the config cannot be read."""
    cfg: TrainConfig | None
    backend: str
    flavor: str | None
    timeout_s: int | None
    error: TunepackError | None = None


def place(config_path: str | None, backend: str | None = None, flavor: str | None = None,
          timeout_s: int | None = None) -> Placed:
    try:
        cfg = load_config(config_path) if config_path else None
    except TunepackError as exc:
        return Placed(None, backend or "local", flavor, timeout_s, exc)
    return Placed(cfg, *placement(cfg, backend, flavor, timeout_s))


def ask_to_spend(ctx: Context, placed: Annotated[Placed, Resolve(place)]):
    """Resolver: ask the human through elicitation when the client can and the job costs money; None = nobody
    was asked (the approval room then quotes and returns an approval token)."""
    if placed.error or not can_elicit(ctx):  # a client that can ask the human always does: tokens never approve there
        return None
    try:
        cost = estimate(placed.backend, placed.flavor, placed.timeout_s)
    except TunepackError:
        return None  # the tool body reports the real error
    if not cost.needs_approval:
        return None
    return Elicit(f"tunepack wants to start a job on {cost.backend}/{cost.flavor} (${cost.price_per_hour_usd:.2f}/h, "
                  f"timeout {cost.timeout_s} s): it may cost up to ${cost.worst_case_usd:.2f}. Approve?", Approval)


SpendApproval = Annotated[ElicitationResult[Approval], Resolve(ask_to_spend)]
PlacedConfig = Annotated[Placed, Resolve(place)]


@guarded
def pipeline_validate(config_path: ConfigPath) -> ValidateResult:
    """Check a training config: keys, types, combinations, paths (session folders read as traces). Errors name
    the key, value and fix."""
    cfg = load_config(config_path)
    return ValidateResult(ok=True, config=cfg.model_dump(mode="json"), registry_name=cfg.registry_name,
                          run_name_base=cfg.run_name, config_hash=config_hash(cfg))


@guarded
def pipeline_render(config_path: ConfigPath,
                    output_path: Annotated[str, Field(description="Where to write the script.")] = "train.py"
                    ) -> RenderResult:
    """Render the self-contained PEP 723 QLoRA SFT script for a config (runs with python, uv run, or as
    an HF Jobs uv script)."""
    from ..traces.spine import training_config_or_pending

    # data.format traces: the script reads converted rows (sessions on an unreachable Hub: converted at run time)
    cfg, pending = training_config_or_pending(load_config(config_path))
    model_path = str(tiny_model_path(cfg)) if cfg.model.is_tiny else None
    run_name = run_name_for(cfg)
    out = write_script(cfg, output_path, model_path=model_path, run_name=run_name)
    how = f"python {out} (add --check-only for the mask check alone), or uv run {out}"
    if pending:
        how = f"{pending} Run the config with pipeline_run."
    if model_path and not Path(model_path, "config.json").is_file():
        how += (f"; the tiny model is built by pipeline_run/pipeline_preflight, or by hand: "
                f"tunepack tiny-model --data {' '.join(cfg.data.path)} -o {model_path}")
    return RenderResult(script_path=str(out), run_name=run_name, config_hash=config_hash(cfg), pins=pins(),
                        how_to_run=how)


@guarded
def pipeline_preflight(config_path: ConfigPath, placed: PlacedConfig, backend: OptBackend = None,
                       flavor: Flavor = None, timeout_s: TimeoutS = None,
                       smoke: Annotated[bool, Field(description="Start the check + smoke job.")] = True
                       ) -> PreflightReport:
    """Be sure before spending: check config, data, model and cost, then start a local job: the mask check
    (GRPO: the RL check) and a few smoke steps."""
    # a config that does not load is reported by preflight as its first check
    return preflight(config_path, backend=placed.backend, flavor=placed.flavor, timeout_s=placed.timeout_s,
                     smoke=smoke)


@guarded
def pipeline_run(ctx: Context, config_path: ConfigPath, approval: SpendApproval, placed: PlacedConfig,
                 backend: OptBackend = None, flavor: Flavor = None, timeout_s: TimeoutS = None, force: Force = False,
                 approval_token: ApprovalToken = None) -> SpendResult:
    """Start the whole pipeline as one job: train, track, register the adapter with its card, run the config's
    eval (HF Jobs: data and outputs in private repos). Returns the job id; paid flavors need approval."""
    if placed.error:
        raise placed.error
    if placed.cfg is None:
        raise ConfigError("config_path is empty.", "pass the path of a tunepack YAML config (e.g. examples/demo.yaml).")
    started = start_pipeline(placed.cfg, backend=placed.backend, timeout_s=placed.timeout_s,
                             flavor=placed.flavor, force=force, consent=consent_from(approval, approval_token, ctx))
    return spend_result(started.spend, run_name=started.run_name)


class PromptRows(BaseModel):
    split: str
    rows: int
    written: int
    output: str
    ceiling: dict | None = None
    leaked_tests: list[str]
    dropped: list[str]
    test_overlap: dict | None = None
    sft_rows: str | None = None


@guarded
def grpo_prompts(mbpp_path: Annotated[str, Field(description="MBPP's full jsonl.")],
                 split: Annotated[Literal["train", "validation", "prompt"], Field(description="train → data.path, "
                                                                                  "validation → grpo.heldout_path.")],
                 output: Annotated[str, Field(description="The .jsonl to write.")],
                 limit: Annotated[int | None, Field(description="The first N problems.", ge=1)] = None
                 ) -> PromptRows:
    """MBPP's split as GRPO prompt rows (one visible test each, the rest scored). Runs no code: GRPO's
    preflight checks the reference solutions."""
    from ..methods.grpo.prompts import write_mbpp_prompts

    return PromptRows(**write_mbpp_prompts(mbpp_path, split, output, limit=limit))


class PreferencePairs(BaseModel):
    output: str = Field(description="The pairs written ({prompt, chosen, rejected, tools} rows): data.path of a "
                                    "training.method dpo config.")
    pairs: int
    problems: int
    problems_paired: int = Field(description="Problems with both a verified and a failed training rollout.")
    verified: int
    failed: int
    heldout: int = Field(description="Held-out rollouts, left out (they measure; they never train).")
    repeats: int


@guarded
def dpo_pairs(paths: Annotated[list[str], Field(description="A GRPO environment run's output folder (it holds "
                                                            "rollouts/), or rollouts folders.", min_length=1)],
              output: Annotated[str, Field(description="The pairs .jsonl to write.")],
              per_problem: Annotated[int, Field(description="At most this many pairs per problem.", ge=1)] = 4
              ) -> PreferencePairs:
    """DPO preference pairs from an environment run's saved rollouts (the coding or an OpenEnv environment): each
    problem's verified rollouts against its failed ones, cut where they part. Runs no code."""
    from ..methods.dpo.rollouts import rollout_pairs, write_pairs

    rows, report = rollout_pairs(paths, per_problem=per_problem)
    out = write_pairs(rows, output, report)
    return PreferencePairs(output=str(out), **{k: report[k] for k in PreferencePairs.model_fields if k != "output"})


TOOLS = [pipeline_validate, pipeline_render, pipeline_preflight, pipeline_run, grpo_prompts, dpo_pairs]
