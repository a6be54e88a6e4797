"""``tunepack harness``: check (CI) or rewrite (sync) the harness files rendered from the catalog; and
``tunepack setup``: add tunepack to any project's (or your own) OpenCode / Codex / Claude Code config.

Usage:
    tunepack harness check [--root DIR]   # exit 1 and one line per drifted file when they differ
    tunepack harness sync [--root DIR]    # rewrite opencode.json, .codex/, .mcp.json, .claude/, plugin, links
    tunepack setup opencode|codex|claude [--project DIR | --user] [--dry-run] [--remove]
"""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("harness", help="check or regenerate the OpenCode / Codex / Claude Code files")
    p.add_argument("action", choices=["check", "sync"])
    p.add_argument("--root", default=None, help="repository root (default: this clone)")
    p.set_defaults(func=run)


def run(args) -> None:
    from ..errors import TunepackError
    from .render import check, default_root, sync

    root = args.root or default_root()
    if args.action == "sync":
        changed = sync(root)
        print("\n".join(f"wrote {c}" for c in changed) or "harness files are up to date")
        return
    problems = check(root)
    if problems:
        for line in problems:
            print(line)
        raise TunepackError(f"{len(problems)} harness file(s) drifted from mcp_server/harness/catalog.py.",
                            "run `tunepack harness sync` and commit the result (edit the catalog, not the files).")
    print(f"ok: the harness files in {root} match the catalog")


def add_setup_parser(sub) -> None:
    p = sub.add_parser("setup", help="add tunepack (MCP servers, skills, commands, roles, asks before spending) to a "
                                     "project's or your own OpenCode / Codex / Claude Code config")
    p.add_argument("harness", choices=["opencode", "codex", "claude"])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--project", default=None, help="the project folder (default: the current directory)")
    where.add_argument("--user", action="store_true",
                       help="your user-level config instead (~/.config/opencode, ~/.codex, ~/.claude.json + ~/.claude)")
    p.add_argument("--dry-run", action="store_true", help="print the diff of what would change; write nothing")
    p.add_argument("--remove", action="store_true", help="take out what setup added (your own keys stay)")
    p.set_defaults(func=run_setup)


def run_setup(args) -> None:
    from .setup import setup

    _, text = setup(args.harness, args.project, user=args.user, dry_run=args.dry_run, remove=args.remove)
    print(text)
