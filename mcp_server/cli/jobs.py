"""``tunepack jobs``: list, follow, cancel and submit jobs; hardware and cost quotes.

Usage:
    tunepack jobs list [--label KEY=VALUE] [--stage RUNNING] | status ID | wait ID | logs ID --tail 50 | cancel ID
    tunepack jobs submit [--backend hf --flavor a10g-small --timeout 3600] [--secret HF_TOKEN] SCRIPT [ARGS…]
    tunepack jobs hardware [--backend hf]          tunepack jobs cost --flavor a10g-small --timeout 3600
"""

from __future__ import annotations

import argparse
import sys

from ..cli_options import YES_HELP
from ..errors import TunepackError
from .common import follow, print_json, progress, report_spend

STAGES = ["SCHEDULING", "RUNNING", "COMPLETED", "ERROR", "CANCELED"]


def add_parser(sub) -> None:
    p = sub.add_parser("jobs", help="list, follow, cancel or submit jobs; hardware and cost quotes")
    actions = p.add_subparsers(dest="action", required=True)
    a = actions.add_parser("list", help="jobs on a backend, newest first")
    a.add_argument("--label", action="append", help="KEY=VALUE filter")
    a.add_argument("--stage", default=None, choices=STAGES)
    _common(a)
    a.set_defaults(func=cmd_list)
    for name, text in (("status", "stage, progress and outcome of one job (a finished remote run is settled)"),
                       ("wait", "follow a job until it ends (Ctrl-C stops following; the job keeps running)"),
                       ("cancel", "cancel a job"), ("logs", "a job's log")):
        a = actions.add_parser(name, help=text)
        a.add_argument("job_id", nargs="?")
        if name == "logs":
            a.add_argument("--tail", type=int, default=None, help="only the last N lines")
        _common(a)
        a.set_defaults(func=cmd_logs if name == "logs" else cmd_job)
    _add_submit(actions)
    a = actions.add_parser("hardware", help="hardware flavors with their hourly price")
    a.add_argument("--backend", default="hf", choices=["local", "hf"])
    a.set_defaults(func=cmd_hardware)
    a = actions.add_parser("cost", help="quote a job: worst case, expected cost, approval needed")
    a.add_argument("--backend", default="hf", choices=["local", "hf"])
    a.add_argument("--flavor", default=None)
    a.add_argument("--timeout", type=int, default=None, help="seconds")
    a.add_argument("--replicas", type=int, default=1)
    a.add_argument("--expected", type=float, default=None, help="expected runtime in seconds")
    a.set_defaults(func=cmd_cost)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="local", choices=["local", "hf"])
    p.add_argument("--json", action="store_true", help="print JSON")


def _add_submit(actions) -> None:
    a = actions.add_parser("submit", help="run a rendered script as a job (paid flavors: charged to the budget)")
    a.add_argument("script")
    a.add_argument("script_args", nargs=argparse.REMAINDER,
                   help="arguments for the script: everything after SCRIPT (so tunepack's options go before it)")
    a.add_argument("--backend", default="local", choices=["local", "hf"])
    a.add_argument("--flavor", default=None)
    a.add_argument("--timeout", type=int, default=None, help="kill the job after this many seconds")
    a.add_argument("--label", action="append", help="KEY=VALUE")
    a.add_argument("--secret", action="append", help="a secret's NAME (e.g. HF_TOKEN); the value is read from "
                                                     "the environment")
    a.add_argument("--project", default="tunepack", help="project charged in the budget")
    a.add_argument("--yes", action="store_true", help=YES_HELP)
    a.set_defaults(func=cmd_submit)


def _labels(pairs: list[str] | None) -> dict[str, str]:
    bad = [kv for kv in pairs or [] if "=" not in kv]
    if bad:
        raise TunepackError(f"--label {bad[0]!r} is not KEY=VALUE.", "e.g. --label sweep=lr-grid")
    return dict(kv.split("=", 1) for kv in pairs or [])


def cmd_list(args) -> None:
    from ..jobs import get_backend

    infos = get_backend(args.backend).list(labels=_labels(args.label) or None, stage=args.stage)
    if args.json:
        print_json([i.model_dump() for i in infos])
        return
    for i in infos:
        print(f"{i.id}  {i.stage:<10}  {i.name}")


def _need_id(args) -> None:
    if not args.job_id:
        raise TunepackError(f"`tunepack jobs {args.action}` needs a job id.", "run `tunepack jobs list` to find it.")


def cmd_logs(args) -> None:
    from ..jobs import get_backend

    _need_id(args)
    print(get_backend(args.backend).logs(args.job_id, tail=args.tail))


def cmd_job(args) -> None:
    """status / wait / cancel: then the job's view, after settling a finished remote run."""
    from ..jobs import get_backend
    from ..jobs.views import describe
    from ..pipeline import settle

    _need_id(args)
    backend = get_backend(args.backend)
    if args.action == "cancel":
        backend.cancel(args.job_id)
    elif args.action == "wait":
        follow(backend, args.job_id, None if args.json else progress(False), cancel=False)
    view = describe(backend, args.job_id)
    recorded = settle(backend, view.job)  # a finished remote run lands in the registry, charges are settled
    if recorded:
        view.outcome = {**(view.outcome or {}), **recorded}
    print_json(view.model_dump(mode="json"))


OWN_OPTIONS = ("--backend", "--flavor", "--timeout", "--label", "--secret", "--project")


def _script_args(given: list[str]) -> list[str]:
    """The script's own arguments: everything after SCRIPT (after a ``--`` when given). tunepack's options
    there would silently go to the script (and the job to the wrong place), so they are refused."""
    if given[:1] == ["--"]:
        return given[1:]
    misplaced = [a for a in given if a.split("=", 1)[0] in OWN_OPTIONS]
    if misplaced:
        raise TunepackError(f"{misplaced[0]} comes after SCRIPT, where the script's own arguments go.",
                            "put tunepack's options before SCRIPT (tunepack jobs submit --backend hf --flavor "
                            "t4-small train.py), or write -- before arguments meant for the script.")
    return given


def cmd_submit(args) -> None:
    from ..approval import Consent
    from ..jobs import JobSpec
    from ..pipeline import submit_script

    script_args = _script_args(args.script_args)
    spec = JobSpec(script=args.script, args=script_args, labels=_labels(args.label), secrets=args.secret or [],
                   timeout_s=args.timeout, flavor=args.flavor)
    spent = submit_script(spec, args.backend, project=args.project, consent=Consent.keyboard(args.yes))
    report_spend(spent)
    job = spent.job
    if job is None:  # the keyboard is the approval, so only a refusal ends here, and that raised already
        raise TunepackError("The job was not submitted.", "run `tunepack budget show PROJECT` and try again.")
    print(f"tunepack: submitted {job.id} on {args.backend}" + (f" ({job.url})" if job.url else ""), file=sys.stderr)
    print_json(job.model_dump(mode="json"))


def cmd_hardware(args) -> None:
    from ..jobs import available_hardware

    for h in available_hardware(args.backend):
        print(f"{h.name:<16} ${h.price_per_hour_usd:>7.2f}/h  {h.description}")


def cmd_cost(args) -> None:
    from ..jobs.pricing import estimate

    print_json(estimate(args.backend, args.flavor, args.timeout, args.replicas, args.expected).model_dump())
