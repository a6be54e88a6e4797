"""``tunepack results readme``: write the results section of a README (the ``results_readme`` tool's twin).

Usage:
    tunepack results readme --sweep SWEEP_ID [--readme README.md]          # the sweep and its best adapter
    tunepack results readme --adapter NAME@vN [--adapter NAME@vM] [--no-curves] [--json]
"""

from __future__ import annotations

import json
import sys


def add_parser(sub) -> None:
    p = sub.add_parser("results", help="write what tunepack measured into a README")
    actions = p.add_subparsers(dest="action", required=True)
    r = actions.add_parser("readme", help="write (or replace) the README's results section: sweep table, eval "
                                          "tables, held-out split, curves")
    r.add_argument("--readme", default="README.md", help="the markdown file to write into (default ./README.md)")
    r.add_argument("--sweep", help="a sweep id: its table and curves, and its best adapter's evals")
    r.add_argument("--adapter", action="append", help="NAME@vN to report (repeat for several; default: the "
                                                      "sweep's best)")
    r.add_argument("--loop", help="a continual-learning loop: its cycle table (and its adapter in use)")
    r.add_argument("--title", default="Fine-tuning results", help="the section's heading")
    r.add_argument("--no-curves", action="store_true", help="write no PNG curves")
    r.add_argument("--json", action="store_true", help="print JSON")
    r.set_defaults(func=run_readme)


def run_readme(args) -> None:
    from . import write_results

    section = write_results(args.readme, sweep_id=args.sweep, adapters=args.adapter, curves=not args.no_curves,
                            title=args.title, loop=args.loop)
    if args.json:
        print(json.dumps(section.model_dump(), indent=2))
        return
    print(f"wrote the results section of {section.readme_path}"
          f"{' (replaced the earlier one)' if section.replaced else ''}: {', '.join(section.adapters) or 'no adapter'}"
          + (f"; images: {', '.join(section.images)}" if section.images else ""))
    for item in section.missing:
        print(f"missing: {item}", file=sys.stderr)
