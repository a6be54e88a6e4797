"""Plan a sweep: every run's config diff, flavor, estimated time and cost, the total, and the runs the
ledger refuses (a do-not-repeat entry, or an exact repeat of a recorded experiment).

Nothing is submitted or written here except reading the ledger and the budget; ``submit`` takes a plan.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .. import settings
from ..config import TrainConfig, parse_config, resolve_config
from ..errors import ConfigError
from ..jobs import estimate
from ..ledger import Ledger, config_hash_of, direction_for
from ..methods import method_of
from ..pipeline import data_size
from ..pipeline.remote import check_timeout, expected_seconds, suggest_timeout_s
from ..train.distributed import check_placement, launch_command
from .monitor import eval_task_metric
from .spec import SweepError, SweepSpec, base_data, describe, expand, load_spec, run_config

LOCAL_STARTUP_S = 30.0  # a local run: interpreter, torch and the model load
TINY_TOKENS_PER_S = 4000.0  # the embedded tiny model on CPU


class PlannedRun(BaseModel):
    id: str = Field(description="Run id within the sweep (r01, r02, …).")
    changes: dict[str, Any] = Field(description="The run's config diff against the base (dotted keys).")
    config_hash: str = Field(description="Hash of the training config without run names (the ledger's; a job "
                             "label).")
    flavor: str
    processes: int
    timeout_s: int | None
    expected_s: float = Field(description="Rough expected runtime.")
    expected_usd: float | None
    worst_case_usd: float = Field(description="price × timeout: what the budget is charged at submit.")
    needs_approval: bool
    canary: bool = False
    refused: str | None = Field(None, description="Why the ledger refuses this run (it is not submitted).")
    launch: str = Field(description="How the job's script starts its training processes.")


class SweepPlan(BaseModel):
    name: str
    base: str
    model: str = Field(description="The base model every run trains (with its revision, and the registered adapter "
                       "it starts from), as the base config names it.")
    method: str = Field(description="The training method of the runs (sft, distill, grpo, grpo-env).")
    backend: str
    flavor: str | None
    project: str = Field(description="Trackio project of the runs.")
    ledger: str = Field(description="Ledger project the runs are recorded in.")
    metric: dict = Field(description="Selection metric: name, direction, reduce.")
    max_concurrent: int
    canary: dict | None = Field(description="The canary run and the clean steps it must log first.")
    early_stop: dict
    retries: int
    runs: list[PlannedRun]
    total_runs: int = Field(description="Runs that will be submitted (refused ones excluded).")
    total_worst_case_usd: float
    total_expected_usd: float | None
    expected_wall_s: float = Field(description="Rough wall time of the whole sweep.")
    needs_approval: bool
    budget_cap_usd: float | None
    daily_budget_left_usd: float | None
    within_budget: bool
    notes: list[str]
    eval_time: dict | None = Field(None, description="The base config's eval.tasks: items and expected seconds of "
                                                     "each on the runs' machine, against the run timeout.")
    heldout: dict | None = Field(None, description="The held-out sessions every run is scored on: names, model "
                                 "turns, tool-call turns, tools.")


def identity(cfg: TrainConfig) -> dict:
    """What changes training: the config without run names, output places and job placement."""
    data = cfg.model_dump(mode="json")
    data["tracking"].pop("run_name", None)
    data.pop("output", None)
    data.pop("job", None)
    return data


def ledger_variable(changes: dict[str, Any]) -> tuple[str, Any]:
    """(variable, value) for the ledger: the key itself when one key changes, else 'k1/k2' and a mapping."""
    if len(changes) == 1:
        (key, value), = changes.items()
        return key, value
    if not changes:
        return "baseline", "base"
    return "/".join(changes), json.dumps(changes, sort_keys=True, default=str)


def _model_line(cfg: TrainConfig) -> str:
    return cfg.model.name + (f"@{cfg.model.revision}" if cfg.model.revision else "") + (
        f" from adapter {cfg.model.adapter}" if cfg.model.adapter else "")


def _metric(spec: SweepSpec, base: TrainConfig) -> dict:
    name = spec.metric.name or method_of(base).selection_metric(base)  # the method's held-out curve, or its loss
    # the training scripts' own held-out metrics (eval/distill/kl, eval/reward/tests, eval/monitor/tests) are logged,
    # not eval tasks
    if eval_task_metric(name) and name.count("/") >= 2:
        from ..evals.kit.scorenames import known_prefixes

        task = name.split("/")[1]
        if not any(name.startswith(p) for p in known_prefixes(base.eval.tasks)):
            raise SweepError(f"The metric '{name}' is an eval score, but the base config's eval.tasks "
                             f"({', '.join(base.eval.tasks) or 'none'}) has no task '{task}'.",
                             f"add eval: {{tasks: [{task}]}} to the base (set limit for a quick eval), or select "
                             "on a logged metric such as eval_loss.")
    if name == "eval_loss" and not (base.data.held_out or base.data.eval_split):
        raise SweepError("The metric 'eval_loss' needs eval data, and the base config has none.",
                         "set data.eval_fraction (e.g. 0.1) in the base or in `set`, or select on 'loss'.")
    return {"name": name, "direction": spec.metric.direction or direction_for(name), "reduce": spec.metric.reduce}


def _weight(cfg: TrainConfig) -> tuple:
    t = cfg.training
    return (t.max_length * t.per_device_train_batch_size * cfg.distributed.processes, cfg.lora.r, t.max_steps)


def _lift(ledger: Ledger, e) -> str:
    return (f"; if that verdict was wrong, ledger_record(project='{ledger.project}', experiment_id={e.id}, "
            f"status='{e.status}', do_not_repeat=false) lifts it")


def _refusal(ledger: Ledger, experiments: list, digest: str, changes: dict[str, Any]) -> str | None:
    for e in ledger.blocked(config_hash=digest):
        return (f"the ledger marks this exact config do-not-repeat (#{e.id}, {e.status}: {e.note or 'no note'})"
                + _lift(ledger, e))
    for key, value in changes.items():
        for e in ledger.blocked(variable=key, value=value):
            return (f"{key}={value} is marked do-not-repeat in the ledger (#{e.id}, {e.status}: {e.note or 'no note'})"
                    + _lift(ledger, e))
    for e in experiments:
        if e.config_hash == digest and e.status != "crash":
            return (f"repeats experiment #{e.id} ({e.status}) of ledger project '{ledger.project}': the same config "
                    "gives the same result; change a value (another training.seed, more steps) to run it again")
    return None


def _wall(expected: list[float], canary: float | None, slots: int) -> float:
    """Greedy schedule: the canary gates the others by about a tenth of its time (at least a minute)."""
    start = min(canary, max(60.0, canary * 0.1)) if canary is not None else 0.0
    free = [start] * slots
    end = canary or 0.0
    for seconds in sorted(expected, reverse=True):
        free.sort()
        free[0] += seconds
        end = max(end, free[0])
    return round(end, 1)


def _backend_and_flavor(spec: SweepSpec, base: TrainConfig) -> tuple[str, str | None]:
    backend = spec.backend or base.job.backend
    flavor = spec.flavor or base.job.flavor
    if backend == "local" and flavor not in (None, "local", "cpu"):
        raise SweepError(f"flavor '{flavor}' is a remote flavor, but the sweep runs on the local backend.",
                         "set backend: hf for HF Jobs flavors, or drop flavor for local runs.")
    return backend, flavor


def _checked_run_config(raw_base: dict, spec: SweepSpec, changes: dict[str, Any], rid: str, base_folder: Path,
                        backend: str, flavor: str | None) -> TrainConfig:
    """One run's resolved config, its config errors turned into SweepErrors, checked against the backend."""
    source = f"Run {rid} ({describe(changes)})"
    try:
        cfg = resolve_config(parse_config(run_config(raw_base, spec, changes), source=source), base_dir=base_folder)
    except ConfigError as exc:
        raise SweepError(exc.problem, exc.fix or "fix the values this run sets.") from None
    if backend == "hf" and cfg.model.is_tiny:
        raise SweepError(f"model.name '{cfg.model.name}' is built on this machine and cannot run on HF Jobs.",
                         "use a Hub model id for an hf sweep, or backend: local.")
    check_placement(cfg, backend, flavor)
    return cfg


def _timing(cfg: TrainConfig, spec: SweepSpec, backend: str, flavor: str | None, rows: int, avg: float,
            share: int = 1) -> tuple[float, int | None]:
    """(expected seconds, timeout) of one run; local runs count the held-out loss passes and the CPU they share
    with the ``share`` - 1 runs beside them."""
    if backend == "hf":
        expected = expected_seconds(cfg, rows, avg, flavor)
        timeout = check_timeout(spec.timeout_s or cfg.job.timeout_s or suggest_timeout_s(cfg, rows, avg, flavor),
                                suggest_timeout_s(cfg, rows, avg, flavor), spec.force)
        return expected, timeout
    expected = expected_seconds(cfg, rows, avg, "cpu") - 600
    expected += _eval_passes(cfg, rows, avg) * rows * (cfg.data.eval_fraction or 0.1) \
        * min(avg, cfg.training.max_length) / 150 / 3  # forward only: about a third of a training step's work
    if cfg.model.is_tiny:
        expected *= 150 / TINY_TOKENS_PER_S  # pipeline_remote's CPU rate is for a ~1B model
    expected = expected * share + LOCAL_STARTUP_S
    return expected, spec.timeout_s or cfg.job.timeout_s


def _eval_passes(cfg: TrainConfig, rows: int, avg: float) -> int:
    """How often a run scores its held-out rows (every eval_steps, else logging_steps, and at the end)."""
    if not (cfg.data.held_out or cfg.data.eval_split):
        return 0
    t = cfg.training
    steps = t.max_steps if t.max_steps > 0 else \
        int(rows * t.num_train_epochs / (t.per_device_train_batch_size * t.gradient_accumulation_steps))
    return steps // (t.eval_steps or t.logging_steps) + 1


def _plan_runs(spec: SweepSpec, raw_base: dict, base_folder: Path, backend: str, flavor: str | None,
               ledger: Ledger) -> tuple[list[PlannedRun], dict[str, dict]]:
    """Every expanded run, planned, and its resolved config (by run id)."""
    experiments = ledger.list()
    expanded = list(expand(spec))
    share = min(spec.max_concurrent, settings.local_max_jobs(), len(expanded)) if backend == "local" else 1
    sizes: dict[str, tuple[int, float]] = {}
    runs, configs = [], {}
    for n, changes in enumerate(expanded, start=1):
        rid = f"r{n:02d}"
        cfg = _checked_run_config(raw_base, spec, changes, rid, base_folder, backend, flavor)
        data_key = json.dumps(cfg.data.model_dump(mode="json"), sort_keys=True)
        if data_key not in sizes:
            sizes[data_key] = data_size(cfg)
        rows, avg = sizes[data_key]
        expected, timeout = _timing(cfg, spec, backend, flavor, rows, avg, share)
        cost = estimate(backend, flavor, timeout, 1, expected)
        digest = config_hash_of(identity(cfg))
        runs.append(PlannedRun(
            id=rid, changes=changes, config_hash=digest, flavor=cost.flavor, processes=cfg.distributed.processes,
            timeout_s=timeout, expected_s=round(expected, 1), expected_usd=cost.expected_usd,
            worst_case_usd=cost.worst_case_usd, needs_approval=cost.needs_approval,
            refused=_refusal(ledger, experiments, digest, changes), launch=" ".join(launch_command(cfg))))
        configs[rid] = cfg.model_dump(mode="json")
    return runs, configs


def _refuse_repeats(runs: list[PlannedRun]) -> None:
    """Refuse a run whose training config an earlier run of the sweep already has."""
    hashes = [r.config_hash for r in runs]
    for r in runs:
        if hashes.count(r.config_hash) > 1 and r.refused is None and hashes.index(r.config_hash) != runs.index(r):
            r.refused = "the same training config as an earlier run of this sweep"


def _choose_canary(spec: SweepSpec, live: list[PlannedRun], configs: dict[str, dict], notes: list[str]
                   ) -> dict | None:
    """Mark the canary run (the spec's, else the heaviest) and return the plan's canary entry."""
    if not (spec.canary.enabled and live):
        return None
    if spec.canary.run:
        chosen = next((r for r in live if r.id == spec.canary.run), None)
        if chosen is None:
            raise SweepError(f"canary.run '{spec.canary.run}' is not a planned (unrefused) run.",
                             f"use one of: {', '.join(r.id for r in live)}, or leave it empty.")
    else:
        chosen = max(live, key=lambda r: _weight(TrainConfig.model_validate(configs[r.id])))
    chosen.canary = True
    max_steps = TrainConfig.model_validate(configs[chosen.id]).training.max_steps
    if 0 < max_steps < spec.canary.steps:
        notes.append(f"the canary trains only {max_steps} steps (< canary.steps={spec.canary.steps}): the others "
                     "start when it completes")
    return {"run": chosen.id, "steps": spec.canary.steps}


def _slots(spec: SweepSpec, backend: str, notes: list[str]) -> int:
    """How many runs go at once: max_concurrent, capped by TUNEPACK_LOCAL_MAX_JOBS on the local backend."""
    slots = spec.max_concurrent
    if backend == "local":
        local_max = settings.local_max_jobs()
        if local_max < slots:
            notes.append(f"local jobs run at most {local_max} at once (TUNEPACK_LOCAL_MAX_JOBS); the rest wait")
            slots = local_max
    return slots


def _check_budget(spec: SweepSpec, project: str, total_worst: float, notes: list[str]) -> tuple[float | None, bool]:
    """(the daily budget left, or None for a free sweep; whether the worst case fits the budgets)."""
    daily_left = None
    within = True
    if total_worst > 0:
        from ..approval import Budget

        daily_left = Budget().status(project).remaining_usd
        if total_worst > daily_left + 1e-9:
            within = False
            notes.append(f"the runs may cost up to ${total_worst:.2f}, more than the ${daily_left:.2f} left of project "
                         f"'{project}''s daily budget")
        if spec.retries:
            notes.append(f"an infrastructure retry charges its run again (up to {spec.retries} per run)")
    if spec.budget_usd is not None and total_worst > spec.budget_usd + 1e-9:
        within = False
        notes.append(f"the runs may cost up to ${total_worst:.2f}, over the sweep's budget_usd cap of "
                     f"${spec.budget_usd:.2f}")
    return daily_left, within


def build_plan(source: str | Path | dict, base_dir: str | Path | None = None
               ) -> tuple[SweepPlan, dict[str, dict], SweepSpec]:
    """The plan, each planned run's resolved config (by run id), and the spec."""
    spec, folder = load_spec(source, base_dir)
    raw_base, base_folder = base_data(spec, folder)
    base = resolve_config(parse_config(run_config(raw_base, spec, {}), source="The sweep's base config"),
                          base_dir=base_folder)
    backend, flavor = _backend_and_flavor(spec, base)
    metric = _metric(spec, base)
    ledger_project = spec.ledger or base.tracking.project
    runs, configs = _plan_runs(spec, raw_base, base_folder, backend, flavor, Ledger(ledger_project))
    _refuse_repeats(runs)
    live = [r for r in runs if r.refused is None]
    notes: list[str] = []
    heldout = _heldout(base, notes)
    eval_time = _eval_time(base, flavor if backend != "local" else "local",
                           max((r.timeout_s for r in live if r.timeout_s), default=None), heldout, notes)
    if eval_time and eval_time["expected_s"]:
        notes.append(f"each run's expected_s is its training; the config's eval ({', '.join(base.eval.tasks)}) "
                     f"adds up to {eval_time['expected_s'] / 60:.1f} min a run (every answer at max_tokens; most "
                     "stop sooner)" + ("; local runs that share the CPU take longer each" if backend == "local"
                                       else ""))
    canary = _choose_canary(spec, live, configs, notes)
    slots = _slots(spec, backend, notes)
    if backend == "local" and min(slots, len(live)) > 1:
        notes.append(f"each run's expected_s counts its held-out loss passes and the CPU it shares with the "
                     f"{min(slots, len(live)) - 1} run(s) beside it")
    total_worst = round(sum(r.worst_case_usd for r in live), 4)
    expected_usd = [r.expected_usd for r in live if r.expected_usd is not None]
    daily_left, within = _check_budget(spec, base.tracking.project, total_worst, notes)
    refused = [r for r in runs if r.refused]
    if refused:
        notes.append(f"{len(refused)} run(s) refused by the ledger and not submitted: "
                     + ", ".join(r.id for r in refused))
    canary_s = next((r.expected_s for r in live if r.canary), None)
    wall = _wall([r.expected_s for r in live if not r.canary], canary_s, slots)
    plan = SweepPlan(
        name=spec.name, base=spec.base if isinstance(spec.base, str) else "(inline)", model=_model_line(base),
        method=method_of(base).name, backend=backend,
        flavor=flavor, project=base.tracking.project, ledger=ledger_project, metric=metric,
        max_concurrent=spec.max_concurrent, canary=canary, early_stop=spec.early_stop.model_dump(),
        retries=spec.retries, runs=runs, total_runs=len(live), total_worst_case_usd=total_worst,
        total_expected_usd=round(sum(expected_usd), 4) if expected_usd else None, expected_wall_s=wall,
        needs_approval=any(r.needs_approval for r in live), budget_cap_usd=spec.budget_usd,
        daily_budget_left_usd=daily_left, within_budget=within, notes=notes, heldout=heldout,
        eval_time=eval_time)
    return plan, configs, spec


def _eval_time(base: TrainConfig, flavor: str | None, timeout_s: int | None, heldout: dict | None,
               notes: list[str]) -> dict | None:
    from ..pipeline.preflight import eval_time_check

    checks: list = []
    found = eval_time_check(base, flavor, timeout_s, heldout, checks)
    notes.extend(f"{c.detail} — {c.fix}" for c in checks if c.status == "fail")
    return found


def _heldout(base: TrainConfig, notes: list[str]) -> dict | None:
    """The base config's held-out sessions (every run holds out the same: the draw has its own seed), and a note
    when next-action would find no call in them."""
    from ..pipeline.preflight import heldout_check
    from ..traces.spine import training_config_or_pending

    converted, pending = training_config_or_pending(base)
    if pending:
        return None
    checks: list = []
    summary = heldout_check(converted, checks)
    notes.extend(f"{c.detail} — {c.fix}" for c in checks if c.status == "fail")
    return summary


def plan_sweep(source: str | Path | dict, base_dir: str | Path | None = None) -> SweepPlan:
    return build_plan(source, base_dir)[0]
