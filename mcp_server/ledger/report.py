"""The ledger as a TSV (one row per experiment, for machines) and as a markdown report (for people)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Experiment
    from .store import Ledger

TSV_COLUMNS = ("id", "status", "parent", "variable", "value", "metric_name", "metric_value", "job_id", "worker",
               "do_not_repeat", "config_hash", "hypothesis", "expected", "note", "created_at", "finished_at")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    return " ".join(str(value).replace("\t", " ").split())


def export_tsv(ledger: "Ledger") -> str:
    """Tab-separated, a header line then one line per experiment, oldest first."""
    lines = ["\t".join(TSV_COLUMNS)]
    for e in ledger.list():
        lines.append("\t".join(_cell(getattr(e, c)) for c in TSV_COLUMNS))
    return "\n".join(lines) + "\n"


def _md(value: object) -> str:
    return _cell(value).replace("|", "\\|") or "—"


def _metric(e: "Experiment") -> str:
    return f"{e.metric_value:.4g}" if e.metric_value is not None else "—"


def report_markdown(ledger: "Ledger", k: int = 3, direction: str | None = None) -> str:
    """Summary, the stop rule's verdict, the best experiment, every experiment, and the do-not-repeat list."""
    experiments = ledger.list()
    counts = ledger.counts()
    metric = ledger.metric()
    plateau = ledger.plateau(k=k, direction=direction)
    best = ledger.best(direction=direction)
    out = [f"# Experiments: {ledger.project}", ""]
    out.append(f"{len(experiments)} experiments — " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
               if experiments else "No experiments yet.")
    out.append("")
    if metric:
        out.append(f"Ranked on `{metric}` ({plateau.direction} is better).")
    if best:
        out.append(f"Best: #{best.id} — {best.variable} = {_md(best.value)} → {metric} = {_metric(best)}"
                   + (f" (job {best.job_id})" if best.job_id else "") + ".")
    out.append(f"Stop rule (k = {k}): {'STOP — ' if plateau.should_stop else ''}{plateau.reason}")
    out.append("")
    if experiments:
        out += ["| # | status | parent | changed | value | metric | job | worker | hypothesis | note |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for e in experiments:
            mark = " ★" if best and e.id == best.id else ""
            out.append(f"| {e.id}{mark} | {e.status}{' ⛔' if e.do_not_repeat else ''} | "
                       f"{'#' + str(e.parent) if e.parent else 'baseline'} | {_md(e.variable)} | {_md(e.value)} | "
                       f"{_metric(e)} | {_md(e.job_id)} | {_md(e.worker)} | {_md(e.hypothesis)} | {_md(e.note)} |")
        out.append("")
    blocked = [e for e in experiments if e.do_not_repeat]
    if blocked:
        out += ["## Do not repeat", ""]
        out += [f"- #{e.id}: {e.variable} = {_cell(e.value) or '(unset)'} — {e.status}"
                + (f": {_cell(e.note)}" if e.note else "") for e in blocked]
        out.append("")
    return "\n".join(out)
