"""``tunepack loop``: the continual-learning loop from the shell (the ``loop_*`` tools' twin).

Usage:
    tunepack loop cycle loop.yaml [--json]      # run (or resume after a crash) the next cycle to its decision
    tunepack loop status NAME [--json]          # the cycles, their decisions and reasons, the adapter in use
    tunepack loop cron loop.yaml [--at "0 3 * * 1"]   # the crontab line that runs a cycle on a schedule
    tunepack loop schedule loop.yaml --backend hf --flavor a10g-small --timeout 3600 [--at @weekly]
                       [--max-spend USD] [--yes]        # a scheduled HF job runs each cycle (schedule.py)
    tunepack loop sync NAME [--state-repo NS/REPO]      # the promoted adapter into the local registry
"""

from __future__ import annotations

import json
import shlex
import sys

from ..cli_options import YES_HELP


def add_parser(sub) -> None:
    p = sub.add_parser("loop", help="continual learning: train on new sessions, promote only a better adapter")
    actions = p.add_subparsers(dest="action", required=True)
    c = actions.add_parser("cycle", help="run (or resume) the loop's next cycle: select new sessions, train from the "
                                         "adapter in use, score both on the same held-out rows, promote or keep")
    c.add_argument("spec", help="the loop spec (loop.yaml)")
    c.add_argument("--json", action="store_true", help="print the cycle as JSON")
    c.set_defaults(func=run_cycle_cmd)
    s = actions.add_parser("status", help="the loop's cycles, decisions and the adapter in use")
    s.add_argument("name")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=run_status)
    r = actions.add_parser("cron", help="print the crontab line that runs one cycle on a schedule (local)")
    r.add_argument("spec")
    r.add_argument("--at", default="0 3 * * 1", help="cron schedule (default: Mondays 03:00)")
    r.set_defaults(func=run_cron)
    h = actions.add_parser("schedule", help="run the loop on HF Jobs: a scheduled job runs one cycle each time it "
                                            "fires, against a Hub repo of the loop's state; quoted, a human's yes "
                                            "approves its whole bound (max_cycles, --max-spend)")
    h.add_argument("spec")
    h.add_argument("--backend", choices=["hf"], default="hf", help="where the cycles run (local: `tunepack loop cron`)")
    h.add_argument("--flavor", required=True, help="hardware of each cycle's job (e.g. a10g-small)")
    h.add_argument("--timeout", type=int, required=True, metavar="SECONDS",
                   help="each cycle's job is killed after this long: with the flavor's price, one cycle's worst case")
    h.add_argument("--at", default="@weekly", help="when it fires: @hourly, @daily, @weekly, … or a CRON expression")
    h.add_argument("--max-spend", type=float, default=None, metavar="USD",
                   help="the most all its runs may cost together (default: max_cycles x one cycle's worst case)")
    h.add_argument("--json", action="store_true")
    h.add_argument("--yes", action="store_true", help=YES_HELP)
    h.set_defaults(func=run_schedule)
    y = actions.add_parser("sync", help="record the loop's promoted adapter (its Hub repo's tag `current`) in the "
                                        "local registry, and show the remote loop's state")
    y.add_argument("name")
    y.add_argument("--state-repo", default=None, help="the loop's state repo (default: the one it was scheduled with, "
                                                      "else NAMESPACE/NAME-loop)")
    y.add_argument("--json", action="store_true")
    y.set_defaults(func=run_sync)


def run_cycle_cmd(args) -> None:
    from . import load_spec, run_cycle

    cycle = run_cycle(load_spec(args.spec))
    if args.json:
        print(json.dumps(cycle.model_dump(mode="json"), indent=2))
        return
    print(f"cycle {cycle.number}: trained {cycle.candidate} on {len(cycle.new)} session(s) "
          f"(from {cycle.from_adapter or 'the base model'}); {cycle.decision}: {cycle.reason}")


def run_status(args) -> None:
    from . import read_state

    state = read_state(args.name)
    if args.json:
        print(json.dumps(state.model_dump(mode="json"), indent=2))
        return
    print(f"loop {state.name}: in use {state.current or 'the base model'}; {len(state.frozen)} frozen session(s); "
          f"{state.done_cycles} cycle(s) decided")
    for c in state.cycles:
        print(f"  cycle {c.number} [{c.phase}] {c.candidate or '-'}: {c.decision or '-'} {c.reason or ''}".rstrip())


def run_cron(args) -> None:
    from pathlib import Path

    from . import load_spec

    spec = load_spec(args.spec)  # a spec that does not load is refused now, not at 3 a.m.
    path = shlex.quote(str(Path(args.spec).resolve()))
    log = shlex.quote(str(Path(args.spec).resolve().parent / f"{spec.name}.loop.log"))
    print(f"{args.at} {shlex.quote(sys.executable)} -m mcp_server.cli loop cycle {path} >> {log} 2>&1")


def run_schedule(args) -> None:
    from ..approval import Consent
    from .schedule import schedule_loop

    done = schedule_loop(args.spec, flavor=args.flavor, timeout_s=args.timeout, schedule=args.at,
                         max_spend_usd=args.max_spend, consent=Consent.keyboard(args.yes))
    if args.json:
        print(json.dumps(done.model_dump(mode="json"), indent=2))
        return
    decision = done.spend.decision
    if decision.status == "approval_required":
        print(decision.message)
        return
    print(f"scheduled {done.schedule_id} ({args.at}, {args.flavor}): at most {done.max_cycles} cycle(s) and "
          f"${done.bound_usd:.2f} in all (one cycle up to ${done.per_cycle_usd:.2f}); state in {done.state_repo}, "
          f"promoted adapters in {done.adapter_repo} (tag current); `tunepack loop sync` brings them here")


def run_sync(args) -> None:
    from .sync import sync_loop

    done = sync_loop(args.name, args.state_repo)
    if args.json:
        print(json.dumps(done.model_dump(mode="json"), indent=2))
        return
    print(f"loop {args.name} on the Hub ({done.state_repo}): {done.cycles_run} of {done.max_cycles} cycle(s), "
          f"${done.spend_usd:.2f} of ${done.max_spend_usd:.2f}" + (f"; suspended: {done.suspended}" if done.suspended
                                                                    else ""))
    if done.current is None:
        print("nothing promoted yet")
    else:
        print(f"in use: {done.current.repo}@{done.current.commit[:12]} (cycle {done.current.cycle}) -> "
              f"{done.registered}" + (" (already in the registry)" if done.already else " (registered)"))
