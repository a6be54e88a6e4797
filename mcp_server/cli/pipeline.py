"""Pipeline commands: validate, render, preflight, run (local or HF Jobs), the tiny replicas, data checks and
the daily budget.

Usage:
    tunepack validate examples/demo.yaml [--show]
    tunepack render examples/demo.yaml -o train.py
    tunepack preflight examples/demo.yaml [--backend hf --flavor a10g-small --timeout 7200]
    tunepack run examples/demo.yaml        |  tunepack run CONFIG --backend hf --flavor a10g-small --timeout 7200
    tunepack grpo-prompts --mbpp mbpp.jsonl --split train -o train.jsonl  |  grpo-prompts --rows rows.jsonl -o p.jsonl
    tunepack env-trajectories train.jsonl -o warm.jsonl            # scripted coding-environment episodes, SFT rows
    tunepack env-trajectories tasks.jsonl -o warm.jsonl --openenv count_env:CountEnvironment --env-path DIR
    tunepack tiny-model --data examples/data/agent_traces.jsonl -o /tmp/tiny [--family llama3]
    tunepack budget show|set PROJECT [USD]  |  tunepack data inspect PATH | preview CONFIG --row N
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..cli_options import YES_HELP
from ..errors import TunepackError
from .common import follow, print_json, progress, report_spend


def add_parsers(sub) -> None:
    _add_config_commands(sub)  # validate, render, preflight, rl-check, run
    _add_grpo_data_commands(sub)  # grpo-prompts, env-trajectories
    _add_tool_commands(sub)  # tiny-model, budget, approve, data


def _add_config_commands(sub) -> None:
    p = sub.add_parser("validate", help="check a config (keys, types, combinations, paths)")
    p.add_argument("config")
    p.add_argument("--show", action="store_true", help="print the config with defaults filled in")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("render", help="write the self-contained PEP 723 training script")
    p.add_argument("config")
    p.add_argument("-o", "--output", default="train.py")
    p.add_argument("--run-name", default=None, help="Trackio run name (default: from the config + a timestamp)")
    p.add_argument("--flavor", default=None, help="plan for this HF Jobs flavor and print the plan (distillation: "
                   "the memory quote, 4-bit teacher or not; GRPO: the generation path, precision, sizing)")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("preflight", help="be sure before spending: checks, the cost quote, a mask-check + smoke job")
    p.add_argument("config")
    p.add_argument("--backend", default=None, choices=["local", "hf"], help="where the real run would go "
                   "(default: the config's job.backend)")
    p.add_argument("--flavor", default=None, help="HF Jobs hardware flavor of the real run (default: job.flavor)")
    p.add_argument("--timeout", type=int, default=None, help="the real run's timeout, for the quote (default: "
                   "job.timeout_s)")
    p.add_argument("--no-smoke", dest="smoke", action="store_false", help="checks and quote only, no smoke job")
    p.add_argument("--no-wait", dest="wait", action="store_false", help="do not wait for the smoke job")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_preflight)

    p = sub.add_parser("rl-check", help="GRPO on HF Jobs: the RL check with the real model on the run's GPU flavor "
                       "(ceiling, sizing, the starting model's groups); a paid job, quoted, a human's yes")
    p.add_argument("config")
    p.add_argument("--flavor", default=None, help="the run's HF Jobs flavor (default: the config's job.flavor)")
    p.add_argument("--yes", action="store_true", help=YES_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rl_check)

    p = sub.add_parser("run", help="validate, render, train as a job (where the config's job section says: local by "
                       "default), track, register the adapter")
    p.add_argument("config")
    p.add_argument("--timeout", type=int, default=None, help="kill the job after this many seconds (default: the "
                   "config's job.timeout_s)")
    p.add_argument("--backend", default=None, choices=["local", "hf"], help="default: the config's job.backend")
    p.add_argument("--flavor", default=None, help="HF Jobs hardware flavor (default: the config's job.flavor)")
    p.add_argument("--force", action="store_true", help="allow an hf training timeout under 30 minutes")
    p.add_argument("-v", "--verbose", action="store_true", help="show every line of the job log")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--yes", action="store_true", help=YES_HELP)
    p.set_defaults(func=cmd_run)


def _add_grpo_data_commands(sub) -> None:
    p = sub.add_parser("grpo-prompts", help="GRPO prompt rows from MBPP (by its task-id splits), with the reward's "
                       "ceiling (reference solutions through the tests reward in the sandbox) and leaked tests; or, "
                       "for the tool_call reward, one row per assistant turn of converted agent-trace rows")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--mbpp", help="MBPP's jsonl (task_id, text, code, test_list)")
    source.add_argument("--rows", help="converted trace rows (jsonl from `tunepack traces convert`: messages + tools)")
    p.add_argument("--split", default="train", choices=["prompt", "test", "validation", "train"], help="MBPP only")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--sandbox", default="auto", choices=["auto", "namespaces", "confined", "unsafe-host"])
    p.add_argument("--keep-impossible", action="store_true", help="keep problems whose reference solution fails")
    p.add_argument("--limit", type=int, default=None, help="the first N problems (or prompt rows) only")
    p.set_defaults(func=cmd_grpo_prompts)

    p = sub.add_parser("env-trajectories", help="scripted episodes of the coding environment (the reference solution "
                       "run, tested, answered) or of an OpenEnv environment (each row's own actions) as SFT rows with "
                       "the tools: a warm start before environment GRPO")
    p.add_argument("rows", help="prompt rows with hidden tests (`tunepack grpo-prompts --mbpp` output); with --openenv, "
                   "task rows with 'actions' (the tool's arguments, one object per call) and optionally 'answer'")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--policy", default="reference", choices=["reference", "no-code"], help="the coding environment's")
    p.add_argument("--openenv", metavar="MODULE:CLASS|URL",
                   help="an OpenEnv environment instead: its class (started here, on --env-path) or a running server")
    p.add_argument("--env-path", default=".", help="with --openenv MODULE:CLASS: the folder holding its module")
    p.add_argument("--tool", default="act", help="with --openenv: the tool's name, as environment.tool (default act)")
    p.add_argument("--sandbox", default="auto", choices=["auto", "namespaces", "confined", "unsafe-host"])
    p.add_argument("--limit", type=int, default=None, help="the first N rows only")
    p.set_defaults(func=cmd_env_trajectories)


def _add_tool_commands(sub) -> None:
    p = sub.add_parser("tiny-model", help="build a tiny random-initialised CPU replica of a model family")
    p.add_argument("--data", nargs="+", required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--family", "--arch", dest="arch", choices=["qwen3", "llama3", "gemma4"], default="qwen3",
                   help="the family replicated: its architecture class, special tokens and stock chat template")
    p.add_argument("--vocab-size", type=int, default=2048)
    p.add_argument("--size", choices=["tiny", "large"], default="tiny",
                   help="large: twice as wide and deep, the same tokenizer, a wider output layer (a distillation teacher)")
    p.set_defaults(func=cmd_tiny_model)

    p = sub.add_parser("budget", help="show or set (humans only) a project's daily spending budget, or the daily "
                                      "cap over all projects (--total)")
    p.add_argument("action", choices=["show", "set"])
    p.add_argument("project", nargs="?", help="the project (e.g. the config's tracking.project)")
    p.add_argument("usd", nargs="?", type=float)
    p.add_argument("--total", type=float, metavar="USD", help="set the daily cap over all projects together")
    p.add_argument("--yes", action="store_true", help="you set it (needed when the command runs without a terminal)")
    p.set_defaults(func=cmd_budget)

    p = sub.add_parser("approve", help="(the custodian account, humans only) approve an open quote of a paid or "
                                       "publishing action, or list the open quotes")
    p.add_argument("token", nargs="?", help="the approval token the quote showed")
    p.add_argument("--list", action="store_true", help="list the open quotes")
    p.set_defaults(func=cmd_approve)

    p = sub.add_parser("data", help="inspect a dataset, or preview the trained tokens of one row")
    p.add_argument("action", choices=["inspect", "preview"])
    p.add_argument("path", help="dataset file/folder (inspect) or config (preview)")
    p.add_argument("--row", type=int, default=0)
    p.set_defaults(func=cmd_data)


def cmd_validate(args) -> None:
    from ..config import dump_config, load_config

    cfg = load_config(args.config)
    if args.json:
        print_json(cfg.model_dump(mode="json"))
    else:
        print(f"ok: {args.config} is valid — model {cfg.model.name}, data {cfg.data.hub_id or ', '.join(cfg.data.path)} "
              f"(format {cfg.data.format})")
        if args.show:
            print(dump_config(cfg), end="")


def cmd_render(args) -> None:
    from ..config import load_config
    from ..methods import method_of, write_script
    from ..pipeline.run import check_rows
    from ..traces.spine import training_config_or_pending
    from ..train.tiny_model import ensure_tiny_model

    # data.format traces: the script reads converted rows (sessions on an unreachable Hub: converted at run time)
    cfg, pending = training_config_or_pending(load_config(args.config))
    if pending:
        print(f"tunepack: note: {pending}", file=sys.stderr)
    model_path = None
    if cfg.model.is_tiny:
        check_rows(cfg)
        model_path = ensure_tiny_model(cfg)
    method = method_of(cfg)
    plan = method.plan(cfg, "hf" if args.flavor else "local", args.flavor)  # refused before any file is written
    out = write_script(cfg, args.output, model_path=model_path, run_name=args.run_name, plan=plan)
    if plan is not None:
        print(json.dumps({method.plan_key: plan}, indent=2))
    print(f"wrote {out} — run it with: python {out}  (or: uv run {out})")


def cmd_run_remote(args) -> None:
    """A run on HF Jobs: through the spending gate (the command is the approval; the daily budget applies),
    follow the metric lines, then settle: the adapter's Hub repo + commit in the registry, the charge reconciled."""
    from ..approval import Consent
    from ..jobs import failure_error, get_backend
    from ..pipeline import settle, start_pipeline

    backend = get_backend(args.backend)
    started = start_pipeline(args.config, backend=backend, timeout_s=args.timeout, flavor=args.flavor,
                             force=args.force, consent=Consent.keyboard(args.yes))
    job = started.job
    assert job is not None, "keyboard consent approves: the job was submitted"
    report_spend(started.spend)
    print(f"tunepack: submitted {job.id} on {args.backend} ({job.url})", file=sys.stderr)
    info = follow(backend, job.id, None if args.json else progress(args.verbose), cancel=False)
    if info.stage != "COMPLETED":
        settle(backend, info)
        raise failure_error(info, backend.logs(info.id))
    settled = settle(backend, info)
    assert settled is not None, "settling a completed remote training job records it"
    result = settled["registered"]
    if args.json:
        print_json(result)
    else:
        print(f"done: {result['steps']} steps, loss {result['first_loss']:.4f} → {result['last_loss']:.4f}")
        print(f"adapter:  {result['hub_repo']} @ {result['hub_commit']} (registry {result['registry_name']} "
              f"v{result['registry_version']})")


def cmd_preflight(args) -> None:
    from ..jobs import failure_error, get_backend
    from ..pipeline.preflight import preflight

    report = preflight(args.config, backend=args.backend, flavor=args.flavor, timeout_s=args.timeout,
                       smoke=args.smoke)
    if report.smoke_job and args.wait:  # the smoke job runs here, whatever backend the real run will use
        backend = get_backend("local")
        info = follow(backend, report.smoke_job.id, None if args.json else progress(False), cancel=True)
        report = report.model_copy(update={"smoke_job": info})
    if report.remote_job and args.wait:  # backend hf: its mask check as an HF job; the verdict is its own
        from ..pipeline.preflight_remote import settle_remote_check

        hf = get_backend("hf")
        info = follow(hf, report.remote_job.id, None, cancel=True)
        report = settle_remote_check(report, info, hf.logs(info.id))
    if args.json:
        print_json(report.model_dump(mode="json"))
    else:
        for check in report.checks:
            print(f"{check.status:<5} {check.name}: {check.detail}" + (f"  Fix: {check.fix}" if check.fix else ""))
        if report.smoke_job:
            print(f"smoke job {report.smoke_job.id}: {report.smoke_job.stage}")
        waited = args.wait and report.smoke_job and report.smoke_job.stage == "COMPLETED"
        print(f"ok: preflight passed — start the run: tunepack run {args.config}" if waited
              else f"next: {report.next_step}")
    if not report.ok:
        raise TunepackError("Preflight failed a check (listed above).", report.next_step)
    job = report.smoke_job
    if job and args.wait and job.stage != "COMPLETED":
        raise failure_error(job, get_backend("local").logs(job.id))


def cmd_rl_check(args) -> None:
    from ..approval import Consent
    from ..pipeline.preflight import rl_check

    report = rl_check(args.config, flavor=args.flavor, consent=Consent.keyboard(args.yes))
    if args.json:
        print_json(report.model_dump(mode="json"))
    else:
        for check in report.checks:
            print(f"{check.status:<5} {check.name}: {check.detail}" + (f"  Fix: {check.fix}" if check.fix else ""))
        print(f"next: {report.next_step}")
    if not report.ok:
        raise TunepackError("The RL check did not start (listed above).", report.next_step)


def cmd_run(args) -> None:
    from ..config import load_config
    from ..pipeline import placement, run_pipeline

    cfg = load_config(args.config)
    args.backend, args.flavor, args.timeout = placement(cfg, args.backend, args.flavor, args.timeout)
    if args.backend != "local":
        return cmd_run_remote(args)
    print(f"tunepack: running {args.config}", file=sys.stderr)
    result = run_pipeline(cfg, on_line=None if args.json else progress(args.verbose), timeout_s=args.timeout)
    if args.json:
        print_json(result.model_dump())
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


def cmd_env_trajectories(args) -> None:
    from ..errors import DataError
    from ..methods.env.trajectories import trajectory_rows
    from ..train.data import read_local_rows

    if not Path(args.rows).is_file():
        raise DataError(f"{args.rows} is not a file.", "point at prompt rows, e.g. from `tunepack grpo-prompts --mbpp`.")
    if args.openenv:
        _openenv_trajectories(args)
        return
    rows = [r for r in read_local_rows(args.rows) if r.get("solution")][:args.limit]
    if not rows:
        raise DataError(f"{args.rows} has no row with a reference 'solution' to script.",
                        "write the rows with `tunepack grpo-prompts --mbpp FILE` (they carry the reference solution).")
    out_rows, report = trajectory_rows(rows, args.policy, sandbox=args.sandbox)
    out = _write_rows(args.output, out_rows)
    print(json.dumps({**report, "output": str(out)}, indent=2))


def _openenv_trajectories(args) -> None:
    from ..methods.env.openenv_trajectories import openenv_trajectory_rows
    from ..train.data import read_local_rows

    url = args.openenv.startswith(("http://", "https://"))
    out_rows, report = openenv_trajectory_rows(read_local_rows(args.rows)[:args.limit],
                                               env=None if url else args.openenv, env_path=args.env_path,
                                               base_url=args.openenv if url else None, tool=args.tool)
    out = _write_rows(args.output, out_rows)
    print(json.dumps({**report, "output": str(out)}, indent=2))


def cmd_grpo_prompts(args) -> None:
    from ..methods.grpo.prompts import write_mbpp_prompts

    if args.rows:
        _tool_prompts(args)
        return
    print(json.dumps(write_mbpp_prompts(args.mbpp, args.split, args.output, limit=args.limit, check=True,
                                        sandbox=args.sandbox, keep_impossible=args.keep_impossible), indent=2))


def _tool_prompts(args) -> None:
    """grpo-prompts --rows: one prompt row per assistant turn of the trace rows, for the tool_call reward."""
    from ..errors import DataError
    from ..methods.grpo.prompts import tool_rows
    from ..train.data import read_local_rows

    if not Path(args.rows).is_file():
        raise DataError(f"{args.rows} is not a file.", "point --rows at the jsonl `tunepack traces convert` wrote.")
    stats: dict = {}
    prompts = tool_rows(read_local_rows(args.rows), stats)[:args.limit]
    if not prompts:
        raise DataError(f"{args.rows} gives no prompt rows: no assistant turn after the first message ({stats}).",
                        "point --rows at converted trace rows (messages + tools, or prompt + completion).")
    out = _write_rows(args.output, prompts)
    print(json.dumps({**stats, "written": len(prompts), "output": str(out)}, indent=2))


def _write_rows(output: str, rows: list[dict]) -> Path:
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(out)
    return out


def cmd_tiny_model(args) -> None:
    from ..errors import require_extra

    require_extra("torch", "train")
    from ..train.tiny_model import build_tiny_model

    path = build_tiny_model(args.data, args.output, arch=args.arch, vocab_size=args.vocab_size, size=args.size)
    print(f"wrote a {args.size} {args.arch} replica to {path}")


def cmd_budget(args) -> None:
    from ..approval import Budget, Consent

    budget = Budget()
    project = args.project or "tunepack"
    if args.action == "set":
        amount = args.total if args.total is not None else args.usd
        if amount is None or amount < 0 or (args.total is None and not args.project):
            raise TunepackError("`tunepack budget set` needs a project and a daily amount in USD (0 or more), or "
                                "--total USD.", "e.g. tunepack budget set my-project 25, or tunepack budget set "
                                "--total 40")
        if not Consent.keyboard(args.yes).at_keyboard:
            raise TunepackError("No terminal: a budget is set by a person, and this command runs without a terminal.",
                                "a person: run it in a terminal (or add --yes); an agent: ask the human to set it.")
        if args.total is not None:
            budget.set_total(amount)
        else:
            budget.set_limit(project, amount)
    print_json(budget.status(project).model_dump())


def cmd_approve(args) -> None:
    """The custodian's yes: run under the account that holds the quotes (an agent cannot open them)."""
    from ..approval import Consent, TokenStore

    store = TokenStore()
    if args.list or not args.token:
        print_json([q.model_dump() for q in store.open_quotes()])
        return
    if not Consent.keyboard().at_keyboard:
        raise TunepackError("No terminal: `tunepack approve` is a person's yes, and this command runs without one.",
                            "run it yourself in a terminal under the custodian account.")
    quote = store.approve(args.token)
    print(f"approved: {quote.summary or quote.tool} (${quote.cost_usd:.2f}); the agent may now call {quote.tool} "
          "again with this token")


def cmd_data(args) -> None:
    if args.action == "inspect":
        from ..viewer import inspect_dataset

        print_json(inspect_dataset([args.path]).model_dump())
    else:
        from ..pipeline.preview import preview_row

        result = preview_row(args.path, args.row)
        print(result["preview"])
        print(f"\n{result['trained_tokens']} of {result['tokens']} tokens trained; problems: {result['problems'] or 'none'}")


