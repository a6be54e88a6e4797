"""GRPO's part of the preflight (the RL preflight), before any money is spent:

- the plan: rewards and monitors, the sizing said plainly (prompts per step = batch x accumulation / generations),
  the generation path on the flavor (vLLM colocate or transformers, and why), where the run starts from;
- the ceiling: each row's reference solution through the code rewards in this machine's sandbox, the rows that
  cannot pass listed (the run drops them);
- the leakage: no scored test shown in a prompt, no MBPP test problem trained on or selected by (refused before
  this, in the data check);
- the signal: the starting model's groups, which needs the real model, so it runs in the preflight's job
  (``--rl-check``: the local job, or on HF Jobs the quoted job on the run's own flavor).

    plan = grpo_preflight(cfg, "hf", "a10g-small", checks)   # None for SFT and distillation
"""

from __future__ import annotations

from ...config import TrainConfig
from ...errors import TunepackError
from ...jobs import flavor_info
from ..base import Check

RL_CHECK_TIMEOUT_S = 1200  # the remote --rl-check: load the model, the ceiling, k samples for signal_prompts prompts


def grpo_preflight(cfg: TrainConfig, backend: str, flavor: str | None, checks: list[Check]) -> dict | None:
    """The plan (a ``grpo`` check) and the host's ceiling (a ``ceiling`` check); None for other methods."""
    if cfg.training.method != "grpo":
        return None
    from ...train.start import start_adapter
    from .plan import prompt_rows, runs_code

    try:
        plan = flavor_plan(cfg, backend, flavor, start=start_adapter(cfg, remote=backend != "local"))
        if plan["generation"]["error"]:
            problem, fix = plan["generation"]["error"]
            checks.append(Check(name="grpo", status="fail", detail=problem, fix=fix))
            return plan
        rows, held = prompt_rows(cfg)
    except TunepackError as exc:
        checks.append(Check(name="grpo", status="fail", detail=exc.problem, fix=exc.fix))
        return None
    checks.append(Check(name="grpo", status="pass", detail=_plan_line(plan, rows, held)))
    plan["leaks"] = {"checked": len(rows) + len(held), "leaked": 0}
    if runs_code(cfg, plan["monitor"]) and cfg.grpo.ceiling_check:
        plan["ceiling"] = _ceiling(cfg, rows + held, checks)
    return plan


def flavor_plan(cfg: TrainConfig, backend: str, flavor: str | None, start: dict | None = None) -> dict:
    """What a GRPO run does on a flavor, as its job will choose: the generation path (vLLM colocate and its share
    of the GPU's memory, or transformers, and why), the precision, the sizing, the rewards and monitors."""
    from .plan import grpo_plan

    hardware = flavor_info(backend, flavor)
    cuda = bool(hardware.accelerator)
    use_4bit = cfg.quantization == "4bit" or (cfg.quantization == "auto" and cuda)
    plan = grpo_plan(cfg, cuda=cuda, use_4bit=use_4bit, flavor=flavor, start=start)
    half = "bf16" if (hardware.compute_capability or 0) >= 8.0 else "fp16"
    plan["precision"] = (f"4-bit nf4 base (QLoRA), {half} compute" if use_4bit else
                         f"{half} weights, LoRA in {half}" if cuda else "float32 (no GPU)")
    return plan


def _plan_line(plan: dict, rows: list[dict], held: list[dict]) -> str:
    rewards = ", ".join(f"{name} ({weight:g})" for name, weight in plan["rewards"].items())
    monitors = f"; monitors (logged, not trained): {', '.join(plan['monitor'])}" if plan["monitor"] else ""
    start = f"; starts from {plan['start']['ref']} ({plan['start']['method']})" if plan["start"] else ""
    return (f"{len(rows)} train prompts, {len(held) or 'a data.eval_fraction of'} held out; rewards {rewards}"
            f"{monitors}; {plan['sizing']['line']}; generation: {plan['generation']['reason']}{start}; no scored "
            f"test shown in any prompt; in the job: {', '.join(plan['in_the_job']) or 'nothing more'}")


def _ceiling(cfg: TrainConfig, rows: list[dict], checks: list[Check]) -> dict | None:
    """The reference solutions through the tests reward in this machine's sandbox; pending when it has none."""
    from .prompts import ceiling

    if cfg.environment is not None:  # the environment scores the hidden tests
        from ...evals.kit.coding_env import split_tests

        rows = [{**r, "tests": split_tests(r)[1]} for r in rows]
    with_solution = [r for r in rows if r.get("solution") and r.get("tests")]
    if not with_solution:
        checks.append(Check(name="ceiling", status="skipped", detail="no row carries a reference 'solution': the "
                            "reward's ceiling is unknown (every problem is assumed solvable)"))
        return None
    from ...evals.kit.errors import KitError

    try:
        found = ceiling(with_solution, mode=cfg.grpo.sandbox)
    except (KitError, TunepackError) as exc:  # the kit's KitError: this machine cannot isolate code; the job checks it
        checks.append(Check(name="ceiling", status="pending", detail=f"not checked here ({exc.problem}); the job "
                            "runs the reference solutions in its sandbox before training"))
        return None
    impossible = found["impossible"]
    checks.append(Check(name="ceiling", status="pass", detail=(
        f"{found['solvable']} of {found['problems']} reference solutions pass their tests in the {found['sandbox']} "
        f"sandbox: the reward's ceiling is {found['ceiling']:.1%}"
        + (f"; the run drops the {len(impossible)} it cannot pass ({', '.join(impossible[:10])}"
           + (" ..." if len(impossible) > 10 else "") + ")" if impossible else ""))))
    return found
