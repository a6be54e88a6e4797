"""Read a run the way a careful person would: per-metric first/last/min/max, the recent trend, and
flags for NaN, divergence and plateaus — so an agent that cannot see a dashboard can still decide
whether to stop, continue or change the config."""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from .divergence import diverging
from .store import MetricPoint, TrackioStore

LOSS_KEYS = ("loss", "eval_loss")
PLATEAU_REL = 0.01


class MetricReport(BaseModel):
    name: str
    points: int
    first: float
    last: float
    min: float
    max: float
    best_step: int = Field(description="step of the minimum (loss-like) or maximum (other metrics)")
    trend: str = Field(description="falling | rising | flat over the recent window")
    change_pct: float = Field(description="relative change over the recent window, in percent")
    window: str = Field("", description="the recent window trend and change_pct read: its logs and steps "
                                        "(first → last is the whole run)")


class RunReport(BaseModel):
    project: str
    run: str
    last_step: int
    metrics: list[MetricReport]
    flags: list[str] = Field(description="NaN, divergence and plateau warnings; empty when healthy")


def _series(points: list[MetricPoint], key: str) -> list[tuple[int, float]]:
    return [(p.step, p.values[key]) for p in points if key in p.values]


def _window(n: int) -> int:
    return max(3, min(n, max(5, n // 5)))


def analyse_series(name: str, series: list[tuple[int, float]],
                   rates: dict[int, float] | None = None) -> tuple[MetricReport | None, list[str]]:
    """A metric's report and flags; ``rates``: the learning rate logged at each step (warmup logs at 0 are not a
    reference for divergence)."""
    flags = []
    bad = [(s, v) for s, v in series if not math.isfinite(v)]
    if bad:
        flags.append(f"{name} became {bad[0][1]} at step {bad[0][0]}: training diverged numerically; "
                     "lower the learning rate or check the data for empty/garbled rows")
    finite = [(s, v) for s, v in series if math.isfinite(v)]
    if not finite:
        return None, flags
    values = [v for _, v in finite]
    lower_is_better = name in LOSS_KEYS or name.endswith("loss")
    best = min(finite, key=lambda sv: sv[1]) if lower_is_better else max(finite, key=lambda sv: sv[1])
    recent = values[-_window(len(values)):]
    base = recent[0] if recent[0] != 0 else 1e-12
    change = (recent[-1] - recent[0]) / abs(base)
    trend = "flat" if abs(change) < PLATEAU_REL else ("falling" if change < 0 else "rising")
    if lower_is_better:
        verdict = diverging([(s, v, (rates or {}).get(s)) for s, v in finite], name=name)
        if verdict.kind == "rising":
            flags.append(f"{verdict.reason}: the run is diverging; stop it and lower the learning rate")
    if lower_is_better and len(values) >= 6 and trend == "flat":
        steps = {s for s, _ in finite[-len(recent):]}
        window_rates = [r for s, r in (rates or {}).items() if s in steps]
        peak = max((rates or {}).values(), default=0.0)
        if window_rates and peak > 0 and sum(window_rates) / len(window_rates) < 0.25 * peak:
            flags.append(f"{name} changed less than {PLATEAU_REL:.0%} over the last {len(recent)} logs, where the "
                         f"learning rate had decayed to {window_rates[-1]:.2g} (peak {peak:.2g}): the schedule's "
                         f"end, not a plateau; judge the run by first → last ({values[0]:.4g} → {values[-1]:.4g})")
        else:
            flags.append(f"{name} changed less than {PLATEAU_REL:.0%} over the last {len(recent)} logs: a plateau; "
                         "more steps are unlikely to help at this learning rate")
    report = MetricReport(name=name, points=len(values), first=values[0], last=values[-1], min=min(values),
                          max=max(values), best_step=best[0], trend=trend, change_pct=round(100 * change, 2),
                          window=f"last {len(recent)} of {len(values)} logs (steps {finite[-len(recent)][0]}-"
                                 f"{finite[-1][0]})")
    return report, flags


def run_report(store: TrackioStore, project: str, run: str, metrics: list[str] | None = None) -> RunReport:
    points = store.history(project, run)
    keys = metrics or sorted({k for p in points for k in p.values})
    reports, flags = [], []
    rates = dict(_series(points, "learning_rate"))
    for key in keys:
        report, found = analyse_series(key, _series(points, key), rates)
        flags.extend(found)
        if report:
            reports.append(report)
    return RunReport(project=project, run=run, last_step=points[-1].step if points else 0, metrics=reports,
                     flags=flags)


class CompareRow(BaseModel):
    run: str
    last: float | None
    best: float | None
    best_step: int | None
    points: int


def compare_runs(store: TrackioStore, project: str, runs: list[str], metric: str) -> list[CompareRow]:
    """One row per run, best first (lower is better for losses, higher for everything else)."""
    rows = []
    for run in runs:
        report, _ = analyse_series(metric, _series(store.history(project, run), metric))
        if report is None:
            rows.append(CompareRow(run=run, last=None, best=None, best_step=None, points=0))
            continue
        lower = metric in LOSS_KEYS or metric.endswith("loss")
        rows.append(CompareRow(run=run, last=report.last, best=report.min if lower else report.max,
                               best_step=report.best_step, points=report.points))
    lower = metric in LOSS_KEYS or metric.endswith("loss")
    return sorted(rows, key=lambda r: (r.best is None, (r.best or 0) if lower else -(r.best or 0)))
