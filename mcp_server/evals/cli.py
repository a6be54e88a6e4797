"""``tunepack eval``: evaluate a registry version, read recorded results, check the sandbox.

Usage:
    tunepack eval run NAME [--version N] [--tasks humaneval mbpp] [--limit 20 | --ids mbpp/89 …] [--mbpp-source F]
                  [--samples 1 --temperature 0] [--sandbox namespaces|confined|auto|docker|unsafe-host]
                  [--program-timeout 10] [--inference auto|hf|vllm] [--allow-contaminated]
                  [--backend local|hf --flavor a10g-small --timeout 3600]     (every field of the eval section)
    tunepack eval results NAME [--version N]     |   tunepack eval results --job JOB_ID
    tunepack eval sandbox-check                  # can this machine isolate generated code (and how)?
    tunepack eval ladder NAME [--version N] [--tasks T …] [--readme README.md] [--json]
                                                 # every rung of NAME's lineage on the same benchmarks
"""

from __future__ import annotations

import json
import sys


def add_parser(sub) -> None:
    from ..cli_options import YES_HELP, add_model_options
    from ..config.eval_section import EvalSection

    p = sub.add_parser("eval", help="evaluate an adapter on HumanEval/MBPP (Inspect + sandbox), read results")
    actions = p.add_subparsers(dest="action", required=True)
    r = actions.add_parser("run", help="evaluate base and base + adapter of a registry version as a job")
    r.add_argument("name", help="registry name of the adapter line")
    r.add_argument("--version", type=int, help="registry version (default the newest)")
    # the eval section's fields, as the eval_start tool takes them (the job's own --backend/--timeout stay the job's)
    add_model_options(r, EvalSection, rename={"timeout_s": "program-timeout", "backend": "inference"})
    r.add_argument("--backend", default="local", choices=["local", "hf"], help="where the eval job runs")
    r.add_argument("--flavor", help="HF Jobs hardware flavor (--backend hf)")
    r.add_argument("--timeout", type=int, help="kill the eval job after this many seconds")
    r.add_argument("--project", help="Trackio project the scores log into (group eval) and the budget charged "
                                     "(default: the project the adapter was trained in)")
    r.add_argument("--json", action="store_true", help="print JSON")
    r.add_argument("--yes", action="store_true", help=YES_HELP)
    r.set_defaults(func=run_eval)
    s = actions.add_parser("results", help="the recorded results of a registry version or an eval job")
    s.add_argument("name", nargs="?", help="registry name of the adapter line")
    s.add_argument("--version", type=int, help="registry version (default the newest)")
    s.add_argument("--job", help="an eval job id")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=run_results)
    c = actions.add_parser("sandbox-check", help="can this machine isolate generated code?")
    c.set_defaults(func=run_sandbox_check)
    lad = actions.add_parser("ladder", help="the ladder's results table: every rung of an adapter's lineage on the "
                                            "same benchmarks, from each version's latest eval")
    lad.add_argument("name", help="registry name of the last rung (its lineage gives the others)")
    lad.add_argument("--version", type=int, help="registry version (default the newest)")
    lad.add_argument("--tasks", nargs="+", help="the columns (default: every task any rung was evaluated on)")
    lad.add_argument("--readme", help="also write the table into this markdown file's ladder section")
    lad.add_argument("--json", action="store_true", help="print JSON")
    lad.set_defaults(func=run_ladder)


def _show(summary: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2, default=str))
        return
    if summary.get("registry_name"):
        print(f"{summary['registry_name']} v{summary['registry_version']} — results in {summary['results_path']}\n")
    print(summary["table"])


def run_sandbox_check(args) -> None:
    from ..errors import EvalError
    from .kit.probe import sandbox_facts, sandbox_line
    from .kit.sandbox import probe

    print("this machine: " + sandbox_line(sandbox_facts()))
    ok, reason = probe("auto")
    print(("ok: " if ok else "unavailable: ") + reason)
    if not ok:
        raise EvalError(reason, "evaluate as root on Linux with namespaces + cgroups (sandbox: namespaces) or "
                                "with Landlock + seccomp (sandbox: confined), or with sandbox: docker; "
                                "--sandbox unsafe-host runs generated code as root without isolation (labelled).")


def run_results(args) -> None:
    from ..errors import EvalError
    from . import service

    if not (args.name or args.job):
        raise EvalError("`tunepack eval results` needs NAME or --job.", "run `tunepack registry list`.")
    _show(service.eval_results(job_id=args.job, name=args.name, version=args.version), args.json)


def run_eval(args) -> None:
    from ..approval import Consent, reconcile
    from ..cli_options import model_from_args
    from ..config.eval_section import EvalSection
    from ..jobs import failure_error, get_backend
    from . import service

    ev = model_from_args(EvalSection, args, tasks=["humaneval"])
    backend = get_backend(args.backend)
    # the command is the person's approval; a paid flavor is still charged to the daily budget
    started = service.start_eval(args.name, args.version, ev=ev, backend=backend, flavor=args.flavor,
                                 timeout_s=args.timeout, project=args.project,
                                 consent=Consent.keyboard(args.yes))
    job = started.job
    assert job is not None, "keyboard consent approves: the job was submitted"
    if started.spend.cost.paid and started.spend.budget:
        b = started.spend.budget
        print(f"tunepack: charged up to ${started.spend.cost.worst_case_usd:.2f} to project '{b.project}' "
              f"(${b.remaining_usd:.2f} of ${b.limit_usd:.2f} left today)", file=sys.stderr)
    print(f"tunepack: evaluating {started.registry_name} v{started.registry_version} as job {job.id}",
          file=sys.stderr)
    show = None if args.json else (lambda line: line.startswith("[tunepack]") and print("  " + line, file=sys.stderr))
    try:
        info = backend.wait(job.id, on_line=show)
    except KeyboardInterrupt:
        backend.cancel(job.id)
        raise KeyboardInterrupt(f"job {job.id} was cancelled") from None
    reconcile(backend)
    if info.stage != "COMPLETED":
        raise failure_error(info, backend.logs(info.id))
    _show(service.eval_results(job_id=info.id, backend=backend), args.json)


def run_ladder(args) -> None:
    from .ladder import ladder_table, write_section

    table = ladder_table(args.name, args.version, args.tasks)
    if args.readme:
        write_section(args.readme, table.markdown)
    if args.json:
        print(table.model_dump_json(indent=2))
        return
    print(table.markdown)
    for call in table.missing:
        print(f"not evaluated yet: {call}", file=sys.stderr)
    if args.readme:
        print(f"tunepack: the ladder section of {args.readme} now holds this table", file=sys.stderr)
