"""``tunepack sweep``: plan, submit (and follow), status, select, report, resume, cancel, list.

Usage:
    tunepack sweep plan examples/sweep.yaml [--json]
    tunepack sweep submit examples/sweep.yaml [--detach] [--yes]    # --yes: you approve a paid (GPU) sweep
    tunepack sweep status SWEEP_ID [--json]
    tunepack sweep select SWEEP_ID [--metric NAME] [--direction min|max] [--reduce last|best] [--no-record]
    tunepack sweep report SWEEP_ID [-o DIR]
    tunepack sweep resume SWEEP_ID | cancel SWEEP_ID | list
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .status import SweepStatusView


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="sweeps: plan, submit (canary first), status, select the best, report")
    actions = p.add_subparsers(dest="action", required=True)

    def action(name: str, help: str, target: str | None = "sweep_id"):
        a = actions.add_parser(name, help=help)
        if target == "spec":
            a.add_argument("spec", help="a sweep spec (YAML), e.g. examples/sweep.yaml")
        elif target:
            a.add_argument("sweep_id", help="the sweep id (`tunepack sweep list`)")
        a.add_argument("--json", action="store_true")
        a.set_defaults(func=run)
        return a

    action("plan", "the runs, their config diffs, flavor, time and cost (nothing starts)", "spec")
    a = action("submit", "start the sweep (a controller job), then follow it", "spec")
    a.add_argument("--detach", action="store_true", help="return once the controller started")
    a.add_argument("--yes", action="store_true", help="you approve the quoted cost of a paid (GPU) sweep")
    action("status", "one row per run: state, step, last loss, metric, cost")
    a = action("select", "rank the runs, name the best adapter, record keep/discard/crash in the ledger")
    a.add_argument("--metric", help="rank on this metric instead of the spec's")
    a.add_argument("--direction", choices=["min", "max"])
    a.add_argument("--reduce", choices=["last", "best"])
    a.add_argument("--no-record", action="store_true", help="rank only; write nothing to the ledger")
    a = action("report", "the markdown table and the PNG of the runs' curves")
    a.add_argument("-o", "--output", help="copy report.md and curves.png into this folder")
    action("resume", "start the controller again after it crashed")
    action("cancel", "stop the controller and cancel the runs")
    action("list", "sweeps on this machine, newest first", None)


def _dump(obj) -> None:
    print(json.dumps(obj.model_dump(mode="json") if hasattr(obj, "model_dump") else obj, indent=2, default=str))


def _money(value: float | None) -> str:
    return "–" if value is None else f"${value:.2f}"


def print_plan(plan) -> None:
    canary = f"; canary {plan.canary['run']} ({plan.canary['steps']} clean steps)" if plan.canary else ""
    m = plan.metric
    print(f"sweep {plan.name} of {plan.model} ({plan.method}): {plan.total_runs} runs on {plan.backend}"
          f"{'/' + plan.flavor if plan.flavor else ''}, "
          f"at most {plan.max_concurrent} at once{canary}; select on {m['name']} ({m['direction']}, {m['reduce']})")
    print("| run | changes | flavor | processes | expected | worst case | note |")
    print("|---|---|---|---:|---:|---:|---|")
    for r in plan.runs:
        changes = ", ".join(f"{k}={v}" for k, v in r.changes.items())
        note = ("REFUSED: " + r.refused) if r.refused else ("canary" if r.canary else "")
        print(f"| {r.id} | {changes} | {r.flavor} | {r.processes} | {r.expected_s / 60:.1f} min | "
              f"{_money(r.worst_case_usd)} | {note} |")
    cap = f"; cap {_money(plan.budget_cap_usd)}" if plan.budget_cap_usd is not None else ""
    print(f"total: up to {_money(plan.total_worst_case_usd)} (expected {_money(plan.total_expected_usd)}), about "
          f"{plan.expected_wall_s / 60:.0f} min wall{cap}: {'within budget' if plan.within_budget else 'OVER BUDGET'}"
          + ("; needs your approval (GPU flavors)" if plan.needs_approval else ""))
    for note in plan.notes:
        print(f"note: {note}")


def _follow(sweep_id: str) -> SweepStatusView:
    from .status import sweep_status

    seen: dict[str, tuple] = {}
    try:
        while True:
            view = sweep_status(sweep_id)
            for row in view.rows:
                key = (row.status, row.step)
                if seen.get(row.run) != key:
                    seen[row.run] = key
                    loss = f", loss {row.last_loss:.4f}" if row.last_loss is not None else ""
                    step = f" step {row.step}/{row.max_steps}" if row.step is not None else ""
                    print(f"  {row.run} {row.status}{step}{loss}", file=sys.stderr, flush=True)
            if view.status not in ("starting", "running") or view.controller["state"] == "crashed":
                return view
            time.sleep(3)
    except KeyboardInterrupt:
        print(f"\nthe sweep keeps running; follow it with: tunepack sweep status {sweep_id}", file=sys.stderr)
        raise SystemExit(130) from None


def _plan(args: argparse.Namespace) -> None:
    from . import plan_sweep

    plan = plan_sweep(args.spec)
    _dump(plan) if args.json else print_plan(plan)


def _submit(args: argparse.Namespace) -> None:
    from ..approval import Consent
    from . import submit_sweep
    from .plan import build_plan

    built = build_plan(args.spec)
    plan = built[0]
    if plan.needs_approval and not args.yes:
        print_plan(plan)
        from ..approval import ApprovalError

        raise ApprovalError(f"This sweep runs on paid GPU flavors and may cost up to "
                            f"${plan.total_worst_case_usd:.2f}.",
                            "check the plan above, then run the same command with --yes to approve it.")
    result = submit_sweep(args.spec, consent=Consent.keyboard(args.yes), built=built)  # --yes: the person approved
    assert result.sweep_id is not None and result.controller_job is not None, "keyboard consent approves: it started"
    if args.json and args.detach:
        _dump(result)
        return
    print(f"tunepack: sweep {result.sweep_id} started (controller job {result.controller_job.id})",
          file=sys.stderr)
    if args.detach:
        print(result.sweep_id)
        return
    view = _follow(result.sweep_id)
    if args.json:
        _dump(view)
        return
    print(view.table)
    print(f"\nsweep {view.sweep_id}: {view.status} — {view.next_step}")


def _status(args: argparse.Namespace) -> None:
    from . import sweep_status

    view = sweep_status(args.sweep_id)
    if args.json:
        _dump(view)
        return
    print(f"sweep {view.sweep_id}: {view.status}; controller {view.controller['state']}; cost so far "
          f"{_money(view.cost_usd)}")
    print(view.table)
    for alert in view.alerts:
        print(f"alert: {alert['run']}: {alert['title']} — {alert['text']}")
    print(f"next: {view.next_step}")


def _select(args: argparse.Namespace) -> None:
    from . import select_sweep

    sel = select_sweep(args.sweep_id, metric=args.metric, direction=args.direction, reduce=args.reduce,
                       record=not args.no_record)
    if args.json:
        _dump(sel)
        return
    print(sel.table)
    print(f"\nledger: {sel.ledger_note}")
    print(f"next: {sel.next_step}")


def _report(args: argparse.Namespace) -> None:
    from .report import write_report
    from .state import read_state, sweep_dir

    folder = sweep_dir(args.sweep_id)
    paths = write_report(folder, read_state(folder))
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        paths = {k: (shutil.copy2(v, out / Path(v).name) if v else None) for k, v in paths.items()}
    if args.json:
        _dump({k: str(v) if v else None for k, v in paths.items()})
        return
    print(Path(paths["markdown_path"]).read_text(encoding="utf-8"))
    print(f"report: {paths['markdown_path']}" + (f"; curves: {paths['png_path']}" if paths["png_path"] else ""))


def _resume(args: argparse.Namespace) -> None:
    from . import resume_sweep

    result = resume_sweep(args.sweep_id)
    assert result.controller_job is not None, "resume_sweep always starts the controller"
    _dump(result) if args.json else print(f"resumed {args.sweep_id}: controller job {result.controller_job.id}")


def _cancel(args: argparse.Namespace) -> None:
    from . import cancel_sweep

    state = cancel_sweep(args.sweep_id)
    _dump(state) if args.json else print(f"sweep {state.id}: {state.status}")


def _list(args: argparse.Namespace) -> None:
    from . import list_sweeps

    ids = list_sweeps()
    _dump(ids) if args.json else print("\n".join(ids) or "no sweeps yet")


ACTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "plan": _plan, "submit": _submit, "status": _status, "select": _select, "report": _report,
    "resume": _resume, "cancel": _cancel, "list": _list,
}


def run(args) -> None:
    ACTIONS[args.action](args)
