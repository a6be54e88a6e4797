"""The ``tunepack`` command line: a thin face over the rooms. Every failure is one clean line.

Usage:
    tunepack validate examples/demo.yaml
    tunepack render examples/demo.yaml -o train.py
    tunepack run examples/demo.yaml
    tunepack tiny-model --data examples/data/agent_traces.jsonl -o /tmp/tiny
    tunepack jobs list | status ID | wait ID | logs ID --tail 50 | cancel ID
    tunepack registry list [NAME] | publish NAME --repo NS/NAME [--public]
    tunepack run CONFIG --backend hf --flavor a10g-small --timeout 7200
    tunepack tracking runs PROJECT | summary PROJECT RUN
    tunepack eval run NAME [--tasks humaneval mbpp] [--limit N] | results NAME | sandbox-check
    tunepack viewer rows|search|filter|stats|size|traces DATASET [--source hf]
    tunepack skills list | check        tunepack pitfall add SKILL --symptom … --cause … --fix …
    tunepack ledger propose|claim|record|list|best|plateau|export -p PROJECT …
    tunepack research models|datasets|papers QUERY | paper ARXIV_ID
    tunepack harness check | sync
    tunepack sweep plan|submit|status|select|report SPEC_OR_ID
    tunepack serve [--http]
    tunepack budget show|set PROJECT [USD]
    tunepack data inspect PATH | preview CONFIG --row N
    tunepack traces convert ~/.pi/agent/sessions ~/.claude/projects -o data/traces.jsonl [--thinking drop]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import __version__
from .errors import TunepackError


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, default=str))


def _progress(verbose: bool):
    """Turn job log lines into short progress lines on stderr."""
    from .jobs.markers import parse_line

    def show(line: str) -> None:
        marker = parse_line(line)
        if marker and marker[0] == "METRIC":
            m = marker[1]
            if "loss" in m:
                parts = [f"step {m['step']}/{m['max_steps']}", f"loss {m['loss']:.4f}"]
                if "mean_token_accuracy" in m:
                    parts.append(f"token acc {m['mean_token_accuracy']:.3f}")
                if "learning_rate" in m:
                    parts.append(f"lr {m['learning_rate']:.2e}")
                print("  " + "  ".join(parts), file=sys.stderr, flush=True)
            elif "eval_loss" in m:
                print(f"  step {m['step']}/{m['max_steps']}  eval loss {m['eval_loss']:.4f}", file=sys.stderr, flush=True)
        elif line.startswith("[tunepack]") or verbose:
            print("  " + line, file=sys.stderr, flush=True)

    return show


def cmd_validate(args) -> None:
    from .config import dump_config, load_config

    cfg = load_config(args.config)
    if args.json:
        _print_json(cfg.model_dump(mode="json"))
    else:
        print(f"ok: {args.config} is valid — model {cfg.model.name}, data {cfg.data.hub_id or ', '.join(cfg.data.path)}")
        if args.show:
            print(dump_config(cfg), end="")


def cmd_render(args) -> None:
    from .config import load_config
    from .pipeline import precheck_data
    from .train.tiny_model import ensure_tiny_model
    from .train.render import write_script

    from .traces.spine import training_config_or_pending

    # data.format traces: the script reads converted rows (sessions on an unreachable Hub: converted at run time)
    cfg, pending = training_config_or_pending(load_config(args.config))
    if pending:
        print(f"tunepack: note: {pending}", file=sys.stderr)
    model_path = None
    if cfg.model.is_tiny:
        precheck_data(cfg)
        model_path = ensure_tiny_model(cfg)
    out = write_script(cfg, args.output, model_path=model_path, run_name=args.run_name)
    print(f"wrote {out} — run it with: python {out}  (or: uv run {out})")


def cmd_run_remote(args) -> None:
    """A run on HF Jobs: through the spending gate (the command is the approval; the daily budget applies),
    follow the metric lines, then settle: the adapter's Hub repo + commit in the registry, the charge reconciled."""
    from .approval import Consent
    from .jobs import failure_error, get_backend
    from .pipeline import settle, start_pipeline

    backend = get_backend(args.backend)
    started = start_pipeline(args.config, backend=backend, timeout_s=args.timeout, flavor=args.flavor,
                             force=args.force, consent=Consent.keyboard())
    job = started.job
    _report_spend(started.spend)
    print(f"tunepack: submitted {job.id} on {args.backend} ({job.url})", file=sys.stderr)
    info = _follow(backend, job.id, None if args.json else _progress(args.verbose), cancel=False)
    if info.stage != "COMPLETED":
        settle(backend, info)
        raise failure_error(info, backend.logs(info.id))
    result = settle(backend, info)["registered"]
    if args.json:
        _print_json(result)
    else:
        print(f"done: {result['steps']} steps, loss {result['first_loss']:.4f} → {result['last_loss']:.4f}")
        print(f"adapter:  {result['hub_repo']} @ {result['hub_commit']} (registry {result['registry_name']} "
              f"v{result['registry_version']})")


def _report_spend(outcome) -> None:
    """What a paid job costs at most and what is left of the day's budget (stderr)."""
    if outcome.cost.paid and outcome.budget:
        b = outcome.budget
        print(f"tunepack: charged up to ${outcome.cost.worst_case_usd:.2f} to project '{b.project}' "
              f"(${b.charged_usd:.2f} of ${b.limit_usd:.2f} today; ${b.remaining_usd:.2f} left)", file=sys.stderr)


def _follow(backend, job_id: str, on_line=None, *, cancel: bool = True):
    """Wait for a job; Ctrl-C cancels it (``cancel``) or only stops following it, and says which."""
    try:
        return backend.wait(job_id, on_line=on_line)
    except KeyboardInterrupt:
        if cancel:
            backend.cancel(job_id)
            raise KeyboardInterrupt(f"job {job_id} was cancelled") from None
        raise KeyboardInterrupt(f"stopped following job {job_id}, which keeps running on {backend.name}: "
                                f"`tunepack jobs status {job_id} --backend {backend.name}` (or `jobs cancel`)"
                                ) from None


def cmd_run(args) -> None:
    from .pipeline import run_pipeline

    if args.backend != "local":
        return cmd_run_remote(args)
    print(f"tunepack: running {args.config}", file=sys.stderr)
    result = run_pipeline(args.config, on_line=None if args.json else _progress(args.verbose), timeout_s=args.timeout)
    if args.json:
        _print_json(result.model_dump())
        return
    print(f"done in {result.wall_time_s:.0f} s: {result.steps} steps, loss {result.first_loss:.4f} → {result.last_loss:.4f}"
          f" ({'4-bit QLoRA' if result.used_4bit else 'LoRA'})")
    print(f"adapter:    {result.adapter_path}  (registry {result.registry_name} v{result.registry_version})")
    print(f"model card: {result.card_path}")
    print(f"trackio:    project '{result.trackio_project}', run '{result.trackio_run}' in {result.trackio_dir}"
          f"  (view: TRACKIO_DIR={result.trackio_dir} trackio show --project {result.trackio_project})")
    print(f"job log:    {result.log_path}")
    if result.eval:
        _print_eval(result.eval)


def _print_eval(summary: dict) -> None:
    if summary.get("error"):
        err = summary["error"]
        print(f"eval:       failed — {err['problem']} Fix: {err['fix']}")
        return
    print(f"eval:       recorded in {summary['results_path']} and the model card\n")
    print(summary["table"])


def cmd_tiny_model(args) -> None:
    from .errors import require_extra

    require_extra("torch", "train")
    from .train.tiny_model import build_tiny_model

    path = build_tiny_model(args.data, args.output, arch=args.arch, vocab_size=args.vocab_size)
    print(f"wrote a tiny {args.arch} replica to {path}")


def cmd_jobs(args) -> None:
    from .jobs import get_backend
    from .jobs.views import describe
    from .pipeline import settle

    backend = get_backend(args.backend)
    if args.action == "list":
        labels = dict(kv.split("=", 1) for kv in args.label or [])
        infos = backend.list(labels=labels or None, stage=args.stage)
        if args.json:
            _print_json([i.model_dump() for i in infos])
        for i in [] if args.json else infos:
            print(f"{i.id}  {i.stage:<10}  {i.name}")
        return
    if not args.job_id:
        raise TunepackError(f"`tunepack jobs {args.action}` needs a job id.", "run `tunepack jobs list` to find it.")
    if args.action == "logs":
        print(backend.logs(args.job_id, tail=args.tail))
        return
    if args.action == "cancel":
        backend.cancel(args.job_id)
    elif args.action == "wait":
        _follow(backend, args.job_id, None if args.json else _progress(False), cancel=False)
    view = describe(backend, args.job_id)
    recorded = settle(backend, view.job)  # a finished remote run lands in the registry, charges are settled
    if recorded:
        view.outcome = {**(view.outcome or {}), **recorded}
    _print_json(view.model_dump(mode="json"))


def cmd_registry(args) -> None:
    from .registry import LocalRegistry

    if args.action == "publish":
        from .approval import Consent
        from .registry.hub import publish_approved

        if not args.name or not args.repo:
            raise TunepackError("`tunepack registry publish` needs a name and --repo.",
                                "e.g. tunepack registry publish my-adapter --repo alice/my-adapter [--public]")
        done = publish_approved(args.name, args.version, args.repo, private=not args.public,
                                consent=Consent.keyboard())  # --public typed by a person is their approval
        _print_json(done.push.model_dump())
        return
    versions = LocalRegistry().list(args.name)
    if args.json:
        _print_json([v.model_dump() for v in versions])
    for v in [] if args.json else versions:
        print(f"{v.name} v{v.version}  {v.path}  (run {v.run_name})")


def cmd_tracking(args) -> None:
    from .tracking import TrackioStore

    store = TrackioStore()
    if args.action == "projects":
        print("\n".join(store.projects()))
    elif args.action == "runs":
        print("\n".join(store.runs(args.project)))
    else:
        _print_json(store.summary(args.project, args.run).model_dump())


def cmd_serve(args) -> None:
    from .server import serve

    serve(http=args.http, host=args.host, port=args.port,
          toolsets=args.toolsets if args.toolsets is not None else os.environ.get("TUNEPACK_TOOLSETS"))


def cmd_budget(args) -> None:
    from .approval import Budget

    budget = Budget()
    if args.action == "set":
        if args.usd is None or args.usd < 0:
            raise TunepackError("`tunepack budget set` needs a daily amount in USD (0 or more).",
                                "e.g. tunepack budget set my-project 25")
        budget.set_limit(args.project, args.usd)
    _print_json(budget.status(args.project).model_dump())


def cmd_data(args) -> None:
    if args.action == "inspect":
        from .viewer import inspect_dataset

        _print_json(inspect_dataset([args.path]).model_dump())
    else:
        from .train.preview import preview_row

        result = preview_row(args.path, args.row)
        print(result["preview"])
        print(f"\n{result['trained_tokens']} of {result['tokens']} tokens trained; problems: {result['problems'] or 'none'}")


def cmd_traces(args) -> None:
    from .traces import ConvertOptions, convert

    opts = ConvertOptions(format=args.format, thinking=args.thinking, rows=args.rows, model=args.model,
                          min_assistant_turns=args.min_assistant_turns, max_tokens=args.max_tokens,
                          tokenizer=args.tokenizer, drop_harness_context=args.drop_harness_context,
                          drop_failed_turns=not args.keep_failed_turns, template=args.template,
                          keep_dangling_tool_calls=args.keep_dangling_tool_calls, max_length=args.max_length)
    _print_json(convert(args.paths, args.output, opts).short())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tunepack", description="Post-train small language models end to end.")
    parser.add_argument("--version", action="version", version=f"tunepack {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="check a config (keys, types, combinations, paths)")
    p.add_argument("config")
    p.add_argument("--show", action="store_true", help="print the config with defaults filled in")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("render", help="write the self-contained PEP 723 training script")
    p.add_argument("config")
    p.add_argument("-o", "--output", default="train.py")
    p.add_argument("--run-name", default=None, help="Trackio run name (default: from the config + a timestamp)")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("run", help="validate, render, train as a local job, track, register the adapter")
    p.add_argument("config")
    p.add_argument("--timeout", type=int, default=None, help="kill the job after this many seconds")
    p.add_argument("--backend", default="local", choices=["local", "hf"])
    p.add_argument("--flavor", default=None, help="HF Jobs hardware flavor (hf backend)")
    p.add_argument("--force", action="store_true", help="allow an hf training timeout under 30 minutes")
    p.add_argument("-v", "--verbose", action="store_true", help="show every line of the job log")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("tiny-model", help="build a tiny random-initialised CPU replica of a model family")
    p.add_argument("--data", nargs="+", required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--family", "--arch", dest="arch", choices=["qwen3", "llama3", "gemma4"], default="qwen3",
                   help="the family replicated: its architecture class, special tokens and stock chat template")
    p.add_argument("--vocab-size", type=int, default=2048)
    p.set_defaults(func=cmd_tiny_model)

    p = sub.add_parser("jobs", help="list, follow or cancel jobs")
    p.add_argument("action", choices=["list", "status", "logs", "wait", "cancel"])
    p.add_argument("job_id", nargs="?")
    p.add_argument("--backend", default="local")
    p.add_argument("--tail", type=int, default=None)
    p.add_argument("--label", action="append", help="KEY=VALUE filter (list)")
    p.add_argument("--stage", default=None, choices=["SCHEDULING", "RUNNING", "COMPLETED", "ERROR", "CANCELED"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_jobs)

    p = sub.add_parser("registry", help="list adapter versions")
    p.add_argument("action", choices=["list", "publish"])
    p.add_argument("name", nargs="?")
    p.add_argument("--repo", help="Hub repo id for publish (namespace/name)")
    p.add_argument("--version", type=int, default=None, help="version to publish (default the newest)")
    p.add_argument("--public", action="store_true", help="publish as a public repo (default private)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_registry)

    p = sub.add_parser("tracking", help="read Trackio projects, runs and run summaries")
    p.add_argument("action", choices=["projects", "runs", "summary"])
    p.add_argument("project", nargs="?")
    p.add_argument("run", nargs="?")
    p.set_defaults(func=cmd_tracking)

    from .evals.cli import add_parser as add_eval_parser
    from .skills.cli import add_parsers as add_skill_parsers

    from .viewer.cli import add_parser as add_viewer_parser

    add_eval_parser(sub)
    add_skill_parsers(sub)
    add_viewer_parser(sub)

    from .harness.cli import add_parser as add_harness_parser
    from .ledger.cli import add_parser as add_ledger_parser
    from .research.cli import add_parser as add_research_parser

    add_ledger_parser(sub)
    add_research_parser(sub)
    add_harness_parser(sub)
    from .sweeps.cli import add_parser as add_sweep_parser  # tunepack sweep plan|submit|status|select|report
    add_sweep_parser(sub)

    p = sub.add_parser("serve", help="start the MCP server (stdio; --http for streamable HTTP on 127.0.0.1)")
    p.add_argument("--http", action="store_true")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--toolsets", default=None,
                   help="comma-separated toolsets to expose: core (default: the whole contract), jobs, tracking, "
                        "viewer, data, ledger, research, or all (also TUNEPACK_TOOLSETS)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("budget", help="show or set (humans only) a project's daily spending budget")
    p.add_argument("action", choices=["show", "set"])
    p.add_argument("project")
    p.add_argument("usd", nargs="?", type=float)
    p.set_defaults(func=cmd_budget)

    p = sub.add_parser("data", help="inspect a dataset, or preview the trained tokens of one row")
    p.add_argument("action", choices=["inspect", "preview"])
    p.add_argument("path", help="dataset file/folder (inspect) or config (preview)")
    p.add_argument("--row", type=int, default=0)
    p.set_defaults(func=cmd_data)

    p = sub.add_parser("traces", help="convert agent sessions (Pi, Claude Code, Codex, OpenCode, OpenAI chat) "
                                      "into SFT rows, with stats")
    p.add_argument("action", choices=["convert"])
    p.add_argument("paths", nargs="+", help="session files or folders (formats detected per file / folder)")
    p.add_argument("-o", "--output", required=True, help="dataset to write: .jsonl or .parquet")
    p.add_argument("--format", default="auto", choices=["auto", "pi", "claude-code", "codex", "opencode", "openai"])
    p.add_argument("--thinking", default="keep", choices=["keep", "drop"])
    p.add_argument("--rows", default="conversation", choices=["conversation", "turn", "window"],
                   help="window = prompt/completion rows of at most --max-length tokens, cut at turn boundaries")
    p.add_argument("--max-length", type=int, default=None, help="window length in tokens (--rows window)")
    p.add_argument("--model", default=None, help="only turns of models whose id contains this")
    p.add_argument("--min-assistant-turns", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=None, help="drop longer rows (needs --tokenizer)")
    p.add_argument("--tokenizer", default=None, help="local tokenizer folder for token counts")
    p.add_argument("--drop-harness-context", action="store_true", help="drop harness-injected context")
    p.add_argument("--keep-failed-turns", action="store_true", help="keep aborted/errored assistant turns")
    p.add_argument("--keep-dangling-tool-calls", action="store_true", help="keep calls that never got a result")
    p.add_argument("--template", default=None, help="shape rows for a training template: TRL's qwen3, qwen2_5, "
                                                    "gptoss, deepseekv3; tunepack's gemma4, gemma4_v2..v5, llama3_1, "
                                                    "llama3_2 (gemma3/llama3/phi3 only with --rows turn)")
    p.set_defaults(func=cmd_traces)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except TunepackError as exc:
        print(f"tunepack: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:  # the commands that follow a job say what became of it
        print(f"tunepack: interrupted{': ' + str(exc) if str(exc) else ''}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
