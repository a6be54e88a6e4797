"""``tunepack eval``: evaluate a registry version, read recorded results, check the sandbox.

Usage:
    tunepack eval run NAME [--version N] [--tasks humaneval mbpp] [--limit 20 | --ids mbpp/89 …] [--mbpp-source F]
                  [--samples 1 --temperature 0] [--sandbox namespaces|unsafe-host|docker]
                  [--allow-contaminated] [--backend local|hf --flavor a10g-small --timeout 3600]
    tunepack eval results NAME [--version N]     |   tunepack eval results --job JOB_ID
    tunepack eval sandbox-check                  # can this machine isolate generated code?
"""

from __future__ import annotations

import json
import sys


def add_parser(sub) -> None:
    p = sub.add_parser("eval", help="evaluate an adapter on HumanEval/MBPP (Inspect + sandbox), read results")
    p.add_argument("action", choices=["run", "results", "sandbox-check"])
    p.add_argument("name", nargs="?", help="registry name of the adapter line")
    p.add_argument("--version", type=int, help="registry version (default the newest)")
    p.add_argument("--tasks", nargs="+", default=["humaneval"], help="humaneval, mbpp or .jsonl problem files")
    p.add_argument("--limit", type=int, help="first N problems per task")
    p.add_argument("--ids", nargs="+", default=[], help="only these problem ids (HumanEval/0, mbpp/89, ...)")
    p.add_argument("--samples", type=int, default=1)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--sandbox", default="namespaces", choices=["namespaces", "unsafe-host", "docker"])
    p.add_argument("--mbpp-source", default="hub", help="'hub' or a path to mbpp.jsonl")
    p.add_argument("--allow-contaminated", action="store_true", help="show contaminated scores (labelled)")
    p.add_argument("--backend", default="local", choices=["local", "hf"])
    p.add_argument("--flavor")
    p.add_argument("--timeout", type=int)
    p.add_argument("--job", help="(results) an eval job id")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _show(summary: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2, default=str))
        return
    if summary.get("registry_name"):
        print(f"{summary['registry_name']} v{summary['registry_version']} — results in {summary['results_path']}\n")
    print(summary["table"])


def run(args) -> None:
    from ..approval import Consent, reconcile
    from ..config.schema import EvalSection
    from ..errors import EvalError
    from ..jobs import failure_error, get_backend
    from . import service

    if args.action == "sandbox-check":
        from .kit.sandbox import probe

        ok, reason = probe("namespaces")
        print(("ok: " if ok else "unavailable: ") + reason)
        if not ok:
            raise EvalError(reason, "evaluate with --sandbox unsafe-host knowingly (labelled), or on a Linux "
                                    "machine where root can create namespaces and cgroups.")
        return
    if args.action == "results":
        if not (args.name or args.job):
            raise EvalError("`tunepack eval results` needs NAME or --job.", "run `tunepack registry list`.")
        _show(service.eval_results(job_id=args.job, name=args.name, version=args.version), args.json)
        return
    if not args.name:
        raise EvalError("`tunepack eval run` needs the registry NAME of the adapter.", "run `tunepack registry list`.")
    ev = EvalSection(tasks=args.tasks, limit=args.limit, ids=args.ids, samples=args.samples, temperature=args.temperature,
                     max_tokens=args.max_tokens, sandbox=args.sandbox, mbpp_source=args.mbpp_source,
                     allow_contaminated=args.allow_contaminated)
    backend = get_backend(args.backend)
    # the command is the person's approval; a paid flavor is still charged to the daily budget
    started = service.start_eval(args.name, args.version, ev=ev, backend=backend, flavor=args.flavor,
                                 timeout_s=args.timeout, consent=Consent.keyboard())
    job = started.job
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
