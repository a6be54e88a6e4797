"""``tunepack ledger``: propose, claim, record and list experiments; best, plateau, export.

Usage:
    tunepack ledger propose -p PROJECT --hypothesis "…" --variable training.learning_rate --value 4e-4 [--parent 1]
                            [--expected "…"] [--config cfg.yaml]
    tunepack ledger claim -p PROJECT --worker worker-1 [ID]
    tunepack ledger record -p PROJECT 3 keep --metric eval/humaneval/pass@1=0.41 [--job JOB] [--note "…"]
                           [--do-not-repeat | --may-repeat]
    tunepack ledger list -p PROJECT [--status running] [--json]
    tunepack ledger best|plateau -p PROJECT [--k 3] [--direction max|min]
    tunepack ledger export -p PROJECT [--format tsv|md] [-o FILE]
    tunepack ledger projects
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Ledger

Show = Callable[[Any], None]  # prints one experiment, as JSON or as a line


def add_parser(sub) -> None:
    p = sub.add_parser("ledger", help="the experiment ledger: propose, claim, record, list, plateau, export")
    actions = p.add_subparsers(dest="action", required=True)

    def action(name: str, help: str) -> argparse.ArgumentParser:
        a = actions.add_parser(name, help=help)
        a.add_argument("-p", "--project", default="default", help="ledger project (default: 'default')")
        a.add_argument("--json", action="store_true")
        a.set_defaults(func=run)
        return a

    a = action("propose", "propose one experiment: one changed variable of a parent")
    a.add_argument("--hypothesis", required=True, help="what you expect and why")
    a.add_argument("--variable", required=True, help="the one config key changed, e.g. training.learning_rate")
    a.add_argument("--value", help="its new value")
    a.add_argument("--parent", type=int, help="the experiment this one changes (none: a baseline)")
    a.add_argument("--expected", help="the expected effect")
    a.add_argument("--config", help="the full config (YAML/JSON file) — its hash detects repeats")
    a.add_argument("--note", help="a note")

    a = action("claim", "claim the oldest proposed experiment (or ID) for a worker, atomically")
    a.add_argument("id", nargs="?", type=int, help="take this experiment, not the oldest proposed")
    a.add_argument("--worker", required=True, help="your worker name")

    a = action("record", "record a job id (running) or an outcome (keep | discard | crash)")
    a.add_argument("id", type=int)
    a.add_argument("status", choices=["running", "keep", "discard", "crash"])
    a.add_argument("--metric", help="NAME=VALUE, e.g. eval/humaneval/pass@1=0.41")
    a.add_argument("--job", help="the job id")
    a.add_argument("--note", help="what happened (notes accumulate)")
    dnr = a.add_mutually_exclusive_group()
    dnr.add_argument("--do-not-repeat", dest="dnr", action="store_const", const=True, default=None,
                     help="never propose this change again (default for discard)")
    dnr.add_argument("--may-repeat", dest="dnr", action="store_const", const=False,
                     help="allow proposing it again (e.g. a crash whose cause is fixed)")
    a.add_argument("--k", type=int, default=3, help="plateau rule: stop after K finished without improvement")
    a.add_argument("--direction", choices=["max", "min"], help="better is max or min (default from the metric)")

    a = action("list", "the project's experiments, oldest first")
    a.add_argument("--status", choices=["proposed", "running", "keep", "discard", "crash"])
    a.add_argument("--variable", help="only experiments changing this key")
    a.add_argument("--worker", help="only this worker's")

    for name, help in (("best", "the best finished experiment"), ("plateau", "the stop rule's verdict"),
                       ("export", "the ledger as markdown or TSV")):
        a = action(name, help)
        a.add_argument("--k", type=int, default=3, help="stop after K finished experiments without improvement")
        a.add_argument("--direction", choices=["max", "min"], help="better is max or min (default from the metric)")
        if name == "export":
            a.add_argument("--format", choices=["tsv", "md"], default="md")
            a.add_argument("-o", "--output", help="write to this file")

    a = actions.add_parser("projects", help="ledger projects on this machine")
    a.set_defaults(func=run)


def _load_config(path: str | None) -> dict | None:
    if not path:
        return None
    import yaml

    from ..errors import LedgerError

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LedgerError(f"Cannot read the config {path}: {exc}.", "pass a YAML or JSON file.") from None
    if not isinstance(data, dict):
        raise LedgerError(f"{path} is not a mapping.", "pass the experiment's full config file.")
    return data


def _line(e) -> str:
    metric = f"  {e.metric_name}={e.metric_value:g}" if e.metric_value is not None else ""
    parent = f"#{e.parent}" if e.parent else "baseline"
    return (f"#{e.id:<4} {e.status:<8} {parent:<9} {e.variable}={e.value or ''}{metric}"
            f"{'  [do-not-repeat]' if e.do_not_repeat else ''}  {e.worker or ''}  {e.hypothesis}")


def _propose(ledger: Ledger, args: argparse.Namespace, show: Show) -> None:
    show(ledger.propose(args.hypothesis, args.variable, args.value, parent=args.parent, expected=args.expected,
                        config=_load_config(args.config), note=args.note))


def _claim(ledger: Ledger, args: argparse.Namespace, show: Show) -> None:
    claimed = ledger.claim(args.worker, args.id)
    if claimed is None:
        print(json.dumps(None) if args.json else "nothing to claim: no proposed experiment")
    else:
        show(claimed)


def _parse_metric(text: str | None) -> tuple[str | None, float | None]:
    """(name, value) of a --metric NAME=NUMBER, (None, None) without one."""
    if not text:
        return None, None
    from ..errors import LedgerError

    name, sep, raw = text.rpartition("=")
    try:
        value = float(raw)
    except ValueError:
        value = None
    if not sep or not name or value is None:
        raise LedgerError(f"--metric '{text}' is not NAME=NUMBER.", "e.g. --metric eval_loss=1.23")
    return name, value


def _record(ledger: Ledger, args: argparse.Namespace, show: Show) -> None:
    name, value = _parse_metric(args.metric)
    show(ledger.record(args.id, args.status, metric_value=value, metric_name=name, job_id=args.job,
                       note=args.note, do_not_repeat=args.dnr))
    if not args.json:
        print(ledger.plateau(args.k, args.direction).reason)


def _list(ledger: Ledger, args: argparse.Namespace, show: Show) -> None:
    rows = ledger.list(status=args.status, variable=args.variable, worker=args.worker)
    if args.json:
        print(json.dumps([e.model_dump() for e in rows], indent=2))
    else:
        print("\n".join(_line(e) for e in rows) or f"no experiments in project '{args.project}'")


def _best(ledger: Ledger, args: argparse.Namespace, show: Show) -> None:
    best = ledger.best(direction=args.direction)
    if best is None:
        print(json.dumps(None) if args.json else "no finished experiment with a metric yet")
    else:
        show(best)


def _plateau(ledger: Ledger, args: argparse.Namespace, show: Show) -> None:
    verdict = ledger.plateau(args.k, args.direction)
    print(json.dumps(verdict.model_dump(), indent=2) if args.json else
          f"should_stop: {str(verdict.should_stop).lower()} — {verdict.reason}")


def _export(ledger: Ledger, args: argparse.Namespace, show: Show) -> None:
    from .report import export_tsv, report_markdown

    text = export_tsv(ledger) if args.format == "tsv" else report_markdown(ledger, args.k, args.direction)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    else:
        print(text, end="")


# Each action but `projects` (which needs no ledger): helper(ledger, args, show).
ACTIONS: dict[str, Callable[..., None]] = {
    "propose": _propose, "claim": _claim, "record": _record, "list": _list, "best": _best,
    "plateau": _plateau, "export": _export,
}


def run(args) -> None:
    from .store import Ledger

    if args.action == "projects":
        print("\n".join(Ledger.projects()))
        return
    ledger = Ledger(args.project)
    show = (lambda obj: print(json.dumps(obj.model_dump(), indent=2))) if args.json else (lambda e: print(_line(e)))
    ACTIONS[args.action](ledger, args, show)
