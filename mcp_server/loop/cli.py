"""``tunepack loop``: the continual-learning loop from the shell (the ``loop_*`` tools' twin).

Usage:
    tunepack loop cycle loop.yaml [--json]      # run (or resume after a crash) the next cycle to its decision
    tunepack loop status NAME [--json]          # the cycles, their decisions and reasons, the adapter in use
    tunepack loop cron loop.yaml [--at "0 3 * * 1"]   # the crontab line that runs a cycle on a schedule
"""

from __future__ import annotations

import json
import shlex
import sys


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
