"""``tunepack dpo pairs``: preference pairs from a GRPO run's rollouts (rollouts.py), for training.method dpo.

Usage:
    tunepack dpo pairs outputs/my-env-run -o pairs.jsonl [--per-problem 4] [--json]
"""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser("dpo", help="DPO preference pairs: build them from a GRPO run's verified and failed rollouts")
    actions = p.add_subparsers(dest="action", required=True)
    pairs = actions.add_parser("pairs", help="pair each problem's verified rollouts with its failed ones")
    pairs.add_argument("paths", nargs="+", help="a GRPO run's output folder (holding rollouts/) or rollouts folders")
    pairs.add_argument("-o", "--output", required=True, help="the pairs file to write (.jsonl)")
    pairs.add_argument("--per-problem", type=int, default=4, help="at most this many pairs per problem (default 4)")
    pairs.add_argument("--json", action="store_true", help="print the report as JSON")
    pairs.set_defaults(func=run_pairs)


def run_pairs(args) -> None:
    from .rollouts import rollout_pairs, write_pairs

    rows, report = rollout_pairs(args.paths, per_problem=args.per_problem)
    out = write_pairs(rows, args.output, report)
    if args.json:
        print(json.dumps({"output": str(out), **report}))
        return
    print(f"{report['pairs']} pairs from {report['problems_paired']} of {report['problems']} problems "
          f"({report['verified']} verified and {report['failed']} failed training rollouts; {report['heldout']} "
          f"held-out rollouts left out, {report['repeats']} repeats) → {out}")
