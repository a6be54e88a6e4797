"""``tunepack traces``: convert agent sessions into SFT rows, or push your own sessions to a Hub dataset repo.
The flags are made from ``ConvertOptions`` / ``PushOptions`` (``cli_options``), the same models the
``traces_convert`` / ``traces_push`` MCP tools take, so the faces cannot drift. A person typing ``push --public``
is the human approval the public repo needs.

Usage:
    tunepack traces convert ~/.pi/agent/sessions ~/.claude/projects -o data/traces.jsonl [--thinking drop]
    tunepack traces convert sessions/ -o rows.jsonl --rows window --max-length 4096 --tokenizer TOK_DIR
    tunepack traces push --repo alice/my-traces [--project ~/code/app] [--since 2026-11-01] [--dry-run]
    tunepack traces push ~/exports/hermes --repo alice/my-traces --public
"""

from __future__ import annotations

import argparse
import json


def add_parser(sub) -> None:
    from ..cli_options import add_model_options
    from .model import ConvertOptions

    p = sub.add_parser("traces", help="convert agent sessions (Pi, Claude Code, Codex, OpenCode, Hermes, Droid, OpenAI "
                                      "chat) into SFT rows, with stats; or push your own sessions to a Hub repo")
    actions = p.add_subparsers(dest="action", required=True)
    c = actions.add_parser("convert", help="convert session files / folders into a .jsonl or .parquet dataset")
    c.add_argument("paths", nargs="+", help="session files or folders (formats detected per file / folder)")
    c.add_argument("-o", "--output", required=True, help="dataset to write: .jsonl or .parquet")
    add_model_options(c, ConvertOptions)
    # the historical spelling of --no-drop-failed-turns
    c.add_argument("--keep-failed-turns", dest="opt_drop_failed_turns", action="store_false",
                   default=argparse.SUPPRESS, help="keep aborted/errored assistant turns (= --no-drop-failed-turns)")
    c.set_defaults(func=run_convert)
    _add_push(actions)


def _add_push(actions) -> None:
    from ..cli_options import YES_HELP, add_model_options
    from .push import PushOptions

    p = actions.add_parser("push", help="push your own agent sessions, raw and with secrets redacted, to a (private) "
                                        "Hub dataset repo; only sessions new or grown since the last push go")
    p.add_argument("paths", nargs="*", help="session files or folders (default: the harnesses' own folders — "
                                            "~/.pi/agent/sessions, ~/.claude/projects, ~/.codex/sessions, "
                                            "~/.codex/archived_sessions, ~/.local/share/opencode/storage, "
                                            "~/.factory/sessions, ~/.hermes/sessions)")
    p.add_argument("--repo", required=True, help="the dataset repo, NAMESPACE/NAME (created private)")
    add_model_options(p, PushOptions)
    p.add_argument("--yes", action="store_true", help=YES_HELP)
    p.set_defaults(func=run_push)


def run_convert(args) -> None:
    from ..cli_options import model_from_args
    from .convert import convert
    from .model import ConvertOptions

    opts = model_from_args(ConvertOptions, args)
    print(json.dumps(convert(args.paths, args.output, opts).short(), indent=2, default=str))


def run_push(args) -> None:
    from pydantic import ValidationError

    from ..approval import Consent
    from ..cli_options import model_from_args
    from ..errors import TraceError
    from .push import PushOptions, push_sessions

    try:
        opts = model_from_args(PushOptions, args)
    except ValidationError as exc:
        problem = "; ".join(f"--{'-'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise TraceError(f"Bad push option: {problem}.", "give days as YYYY-MM-DD, e.g. --since 2026-11-01.") from None
    report = push_sessions(args.paths or None, args.repo, opts, Consent.keyboard(args.yes))
    print(json.dumps(report.model_dump(mode="json"), indent=2))
