"""``tunepack setup opencode|codex|claude``: add tunepack to any project (or to your user-level harness config).

``setup_plan.py`` plans every change, and checks every path and config, before anything is written (what goes
where is said there). This module writes the plan, and prints its diff or what it did.

Should a write fail half way, the changes already made are undone.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from ..errors import SetupError
from .config_files import copy_tree, prune_dirs, write_text
from .setup_plan import (
    CHECK,
    HARNESSES,
    NAMES,
    Change,
    Plan,
    Scope,
    codex_block,
    configured,
    launches,
    plan,
    programs,
    serve_argv,
)

# --- doing it ------------------------------------------------------------------------------------------------------

def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tunepack-link")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, path)


def _do(change: Change, base: Path) -> None:
    if change.kind == "file":
        write_text(change.path, change.after)
    elif change.kind == "skill":
        copy_tree(Path(change.after), change.path) if change.after else shutil.rmtree(change.path)
    elif change.after:
        _link(change.path, change.after)
    else:
        change.path.unlink()
    if change.after is None:
        prune_dirs(change.path.parent, base)


def apply(result: Plan) -> None:
    """Make the changes; when one fails (a full disk, a read-only folder), undo the ones made before it."""
    done: list[Change] = []
    for change in result.changes:
        try:
            _do(change, result.scope.base)
        except OSError as exc:
            for made in reversed(done):
                with contextlib.suppress(OSError):
                    _do(Change(made.path, made.kind, made.after, made.before), result.scope.base)
            raise SetupError(f"Writing {result.scope.show(change.path)} failed: {exc.strerror or exc}.",
                             "fix that (room on the disk, write access) and rerun; the changes made before it were "
                             "undone, setup changed nothing.") from exc
        done.append(change)


def diff(result: Plan) -> str:
    """A unified diff of every text file, one line per skill folder and link."""
    out: list[str] = []
    for c in result.changes:
        name = result.scope.show(c.path)
        if c.kind == "file":
            out += difflib.unified_diff((c.before or "").splitlines(keepends=True),
                                        (c.after or "").splitlines(keepends=True),
                                        "/dev/null" if c.before is None else f"a/{name}",
                                        "/dev/null" if c.after is None else f"b/{name}")
            out += [] if (c.after or c.before or "").endswith("\n") else ["\n"]
        elif c.kind == "skill":
            out.append(f"{'copy skill to' if c.after else 'remove skill'} {name}\n")
        else:
            out.append(f"link {name} -> {c.after}\n" if c.after else f"remove link {name}\n")
    return "".join(out)


def _verb(c: Change) -> str:
    if c.kind == "skill":
        return "copied skill" if c.after else "removed skill"
    if c.kind == "link":
        return "linked" if c.after else "removed link"
    return "created" if c.before is None else "removed" if c.after is None else "updated"


def summary(result: Plan, dry_run: bool = False) -> str:
    """What happened (or would), what was kept, and how to check it."""
    scope, name = result.scope, NAMES[result.harness]
    where = "your user config" if scope.user else str(scope.base)
    lines = [] if dry_run else [f"{_verb(c)} {scope.show(c.path)}" for c in result.changes]
    lines += result.kept
    n = len(result.changes)
    if dry_run:
        lines.append(f"dry run: {n} change(s) above for {name} in {where}; nothing written")
    elif not n:
        lines.append(f"nothing changed: tunepack {'is not' if result.remove else 'is already'} set up for {name} "
                     f"in {where}")
    elif result.remove:
        lines.append(f"removed tunepack from {name} in {where} ({n} change(s))")
    else:
        lines += _next_steps(result)
    return "\n".join(lines)


def _next_steps(result: Plan) -> list[str]:
    scope, harness = result.scope, result.harness
    lines = [f"tunepack is set up for {NAMES[harness]} in {'your user config' if scope.user else scope.base} "
             f"({len(result.changes)} change(s)); server: {' '.join(serve_argv())}",
             f"pitfalls that skills_add_pitfall records go to {scope.skills}"]
    if harness == "codex" and not scope.user:
        lines.append("Codex reads .codex/config.toml only in trusted projects: say yes when `codex` asks to trust "
                     "this folder")
    if harness == "claude" and not scope.user:
        lines.append("Claude Code starts the project's servers once you trust this folder (it asks on first start)")
    lines.append(f"check: `{CHECK[harness]}`{'' if scope.user else ' in ' + str(scope.base)}")
    return lines


def setup(harness: str, project: str | Path | None = None, user: bool = False, dry_run: bool = False,
          remove: bool = False, env: Mapping[str, str] | None = None) -> tuple[Plan, str]:
    """Plan, then write (unless ``dry_run``). Returns the plan and what to print."""
    result = plan(harness, project, user=user, remove=remove, env=env)
    if dry_run:
        return result, diff(result) + summary(result, dry_run=True)
    apply(result)
    return result, summary(result)


__all__ = ["HARNESSES", "Change", "Plan", "Scope", "apply", "codex_block", "configured", "diff", "launches", "plan",
           "programs", "serve_argv", "setup", "summary"]
