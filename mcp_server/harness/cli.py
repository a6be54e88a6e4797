"""``tunepack harness``: check (CI) or rewrite (sync) the harness files rendered from the catalog.

Usage:
    tunepack harness check [--root DIR]   # exit 1 and one line per drifted file when they differ
    tunepack harness sync [--root DIR]    # rewrite opencode.json, .codex/, .mcp.json, .claude/, plugin, links
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
