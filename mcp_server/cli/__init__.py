"""The ``tunepack`` command line: a thin face over the rooms, one module per group of commands (this
package) or the room's own ``cli.py``. Every failure is one clean line.

Usage:
    tunepack validate | render | preflight | run CONFIG          (cli/pipeline.py)
    tunepack jobs list | status | wait | logs | cancel | submit | hardware | cost
    tunepack tracking projects | runs | summary | compare | plot
    tunepack registry list | push | publish        tunepack export NAME [--merge] [--push REPO]
    tunepack eval run NAME | results NAME | sandbox-check
    tunepack traces convert PATHS… -o rows.jsonl
    tunepack viewer rows|search|filter|stats|size|traces DATASET [--source hf]
    tunepack skills list | read | check        tunepack pitfall add SKILL --symptom … --cause … --fix …
    tunepack ledger …   tunepack research …   tunepack sweep …   tunepack harness check | sync
    tunepack results readme --sweep ID | --adapter NAME@vN [--readme README.md]
    tunepack setup opencode|codex|claude [--project DIR | --user] [--dry-run] [--remove]
    tunepack serve [--http [--custodian] [--max-sessions N] [--idle-timeout S]] [--toolsets core,jobs]
    tunepack approve [TOKEN | --list]
    tunepack budget show|set PROJECT [USD] [--yes]      tunepack budget set --total USD
    tunepack data inspect PATH | preview CONFIG --row N      tunepack tiny-model --data F -o DIR
    tunepack dpo pairs RUN_DIR -o pairs.jsonl

docs/commands.md's "MCP tool → CLI command" table maps every MCP tool to its command here.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from ..errors import TunepackError


def _custodian() -> None:
    from ..approval.custodian import activate, prepare_custodian
    from ..server.common import ServerMode

    for note in prepare_custodian():
        print(f"tunepack: custodian: {note}", file=sys.stderr)
    ServerMode.custodian = True
    activate()


def cmd_serve(args) -> None:
    from ..server import serve
    from ..settings import toolsets

    if args.custodian:
        if not args.http:
            raise TunepackError("--custodian serves another OS account's agent, which reaches this server over HTTP.",
                                "add --http (and give the agent's harness the URL http://127.0.0.1:PORT/mcp).")
        _custodian()
    if not args.http and (args.max_sessions is not None or args.idle_timeout is not None):
        raise TunepackError("--max-sessions and --idle-timeout limit the MCP sessions of the HTTP server; over stdio "
                            "the server process is the one session.", "add --http, or drop those flags.")
    limits = {k: v for k, v in (("max_sessions", args.max_sessions), ("idle_timeout_s", args.idle_timeout))
              if v is not None}
    serve(http=args.http, host=args.host, port=args.port,
          toolsets=args.toolsets if args.toolsets is not None else toolsets(), **limits)


def _add_serve(sub) -> None:
    p = sub.add_parser("serve", help="start the MCP server (stdio; --http for streamable HTTP on 127.0.0.1)")
    p.add_argument("--http", action="store_true")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--toolsets", default=None,
                   help="comma-separated toolsets to expose: core (default: the whole contract), jobs, tracking, "
                        "viewer, data, ledger, research, or all (also TUNEPACK_TOOLSETS)")
    p.add_argument("--max-sessions", type=int, default=None, metavar="N",
                   help="--http: at most N MCP sessions open at once (default 64; each holds about 39 KB); a client "
                        "that would open one more gets HTTP 503 naming the cap")
    p.add_argument("--idle-timeout", type=float, default=None, metavar="SECONDS",
                   help="--http: drop a session that has had no request for this long (default 1800)")
    p.add_argument("--custodian", action="store_true",
                   help="run as the custodian account: paid and publishing actions wait for `tunepack approve TOKEN` "
                        "run under this account (see README, Security)")
    p.set_defaults(func=cmd_serve)


def build_parser() -> argparse.ArgumentParser:
    from ..evals.cli import add_parser as add_eval
    from ..harness.cli import add_parser as add_harness
    from ..harness.cli import add_setup_parser as add_setup
    from ..ledger.cli import add_parser as add_ledger
    from ..loop.cli import add_parser as add_loop
    from ..methods.dpo.cli import add_parser as add_dpo
    from ..registry.cli import add_parser as add_export
    from ..report.cli import add_parser as add_results
    from ..research.cli import add_parser as add_research
    from ..skills.cli import add_parsers as add_skills
    from ..sweeps.cli import add_parser as add_sweep
    from ..traces.cli import add_parser as add_traces
    from ..viewer.cli import add_parser as add_viewer
    from . import jobs, pipeline, registry, tracking

    parser = argparse.ArgumentParser(prog="tunepack", description="Post-train small language models end to end.")
    parser.add_argument("--version", action="version", version=f"tunepack {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    pipeline.add_parsers(sub)
    for add in (jobs.add_parser, registry.add_parser, tracking.add_parser, add_eval, add_skills, add_viewer,
                add_ledger, add_research, add_harness, add_sweep, _add_serve, add_traces, add_export,
                add_setup, add_results, add_loop, add_dpo):
        add(sub)
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
