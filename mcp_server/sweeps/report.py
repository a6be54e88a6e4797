"""The sweep as a markdown table (one row per run, best first) and a PNG of the runs' curves (drawn by
``tracking/plot.py`` from the metric lines each run logged — the same for local and remote runs)."""

from __future__ import annotations

import math
from pathlib import Path

from ..tracking.plot import MAX_RUNS, curves_png
from ..tracking.store import MetricPoint
from .spec import describe
from .state import SweepState

FINISHED_OK = ("completed",)


def ranked(state: SweepState, direction: str | None = None) -> list[str]:
    """Ids of completed runs with a metric value, best first."""
    direction = direction or state.metric["direction"]
    scored = [(r.id, r.metric_value) for r in state.runs if r.status in FINISHED_OK and r.metric_value is not None
              and math.isfinite(r.metric_value)]
    scored.sort(key=lambda s: s[1] if direction == "min" else -s[1])
    return [rid for rid, _ in scored]


def _num(value: float | None) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"


def runs_table(state: SweepState, order: list[str] | None = None, metric: str | None = None) -> str:
    """One row per run: rank, changes, status, steps, losses, the selection metric, cost, job."""
    order = ranked(state) if order is None else order
    metric = metric or state.metric["name"]
    best = order[0] if order else None
    rank = {rid: n for n, rid in enumerate(order, start=1)}
    rows = sorted(state.runs, key=lambda r: (rank.get(r.id, len(rank) + 1), r.id))
    lines = [f"| rank | run | changes | status | step | first loss | last loss | {metric} | cost (USD) | job |",
             "|---:|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        status = r.status + (f" ({r.failure})" if r.failure else "") + (" · canary" if r.canary else "") \
            + (" · **best**" if r.id == best else "")
        step = f"{r.step}/{r.max_steps}" if r.step is not None and r.max_steps else (str(r.step) if r.step else "–")
        lines.append(f"| {rank.get(r.id, '–')} | {r.id} | {describe(r.changes)} | {status} | {step} | "
                     f"{_num(r.first_loss)} | {_num(r.last_loss)} | {_num(r.metric_value)} | {r.cost_usd:.2f} | "
                     f"{r.job_id or '–'} |")
    return "\n".join(lines)


class CurveStore:
    """What ``curves_png`` reads (``history``), served from the curves in the sweep state."""

    def __init__(self, state: SweepState):
        self.state = state

    def history(self, project: str, run: str) -> list[MetricPoint]:
        points = []
        for p in self.state.run(run).curve:
            values = {k: float(v) for k, v in p.items() if k != "step" and isinstance(v, (int, float))}
            if values:
                points.append(MetricPoint(step=int(p["step"]), values=values))
        return points


def curve_metrics(state: SweepState) -> list[str]:
    names = ["loss"]
    for extra in ("eval_loss", state.metric["name"]):
        if extra not in names and any(extra in p for r in state.runs for p in r.curve):
            names.append(extra)
    return names[:3]


def curves(state: SweepState, order: list[str] | None = None) -> bytes | None:
    """PNG of the curves of up to 8 runs (best first, then the others), or None when nothing was logged."""
    order = ranked(state) if order is None else order
    ids = order + [r.id for r in state.runs if r.id not in order and r.curve]
    ids = [rid for rid in ids if state.run(rid).curve][:MAX_RUNS]
    if not ids:
        return None
    return curves_png(CurveStore(state), f"sweep {state.id}", ids, curve_metrics(state))


def report_markdown(state: SweepState, order: list[str] | None = None, png_name: str | None = "curves.png") -> str:
    order = ranked(state) if order is None else order
    metric = state.metric
    lines = [f"# Sweep {state.id}", "",
             f"Status **{state.status}** · {len(state.runs)} runs on {state.backend}"
             f"{'/' + state.flavor if state.flavor else ''} · selection: {metric['name']} ({metric['direction']}, "
             f"{metric['reduce']}) · Trackio project `{state.project}` · ledger `{state.ledger}`", ""]
    if state.canary:
        c = state.canary
        verdict = "passed" if c.get("passed") else ("failed: " + c["failed"] if c.get("failed") else "pending")
        lines += [f"Canary {c['run']} ({c['steps']} clean steps): {verdict}", ""]
    lines += [runs_table(state, order), ""]
    if order:
        best = state.run(order[0])
        where = (best.result or {}).get("hub_repo") or (best.result or {}).get("adapter_path")
        lines += [f"Best: **{best.id}** ({describe(best.changes)}), {metric['name']} = {_num(best.metric_value)}"
                  + (f", adapter {best.result.get('registry_name')} v{best.result.get('registry_version')} at {where}"
                     if best.result else ""), ""]
    if state.alerts:
        lines += ["Alerts:", ""] + [f"- {a['run']}: {a['title']} — {a['text']}" for a in state.alerts] + [""]
    if png_name:
        lines += [f"![curves]({png_name})", ""]
    return "\n".join(lines)


def write_report(folder: str | Path, state: SweepState) -> dict:
    """report.md and curves.png in the sweep folder; returns their paths."""
    folder = Path(folder)
    order = ranked(state)
    png = curves(state, order)
    png_path = None
    if png:
        png_path = folder / "curves.png"
        png_path.write_bytes(png)
    md_path = folder / "report.md"
    md_path.write_text(report_markdown(state, order, "curves.png" if png else None), encoding="utf-8")
    return {"markdown_path": str(md_path), "png_path": str(png_path) if png_path else None}
