"""``tunepack setup opencode|codex|claude``: add tunepack to any project (or to your user-level harness config).

``setup_plan.py`` plans every change, and checks every path and config, before anything is written (what goes
where is said there). This module writes the plan, and prints its diff or what it did.

Every write goes through the root's directory descriptor, one path component at a time with ``O_NOFOLLOW``
(``beneath.py``): a folder an agent swaps for a link after the plan's check redirects nothing: a link out of the
root met at the write refuses the run, naming it. Should a write fail half way (that, a full disk, a read-only
folder), the changes already made are undone.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Mapping
from pathlib import Path

from ..errors import SetupError
from .beneath import Beneath
from .config_files import NOT_COPIED
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
    where,
)

# --- doing it ------------------------------------------------------------------------------------------------------

def _do(change: Change, root: Beneath) -> None:
    if change.kind == "file":
        root.write_text(change.path, change.after)
    elif change.kind == "skill":
        if change.after:
            root.copy_tree(Path(change.after), change.path, NOT_COPIED)
        else:
            root.remove_tree(change.path)
    elif change.after:
        root.link(change.path, change.after)
    else:
        root.remove(change.path)
    if change.after is None:
        root.prune(change.path.parent)


def apply(result: Plan) -> None:
    """Make the changes, each through its root's directory descriptor; when one fails (a full disk, a read-only
    folder, a link out of the root swapped in after the plan's check), undo the ones made before it."""
    scope = result.scope
    with contextlib.ExitStack() as held:
        roots: dict[Path, Beneath] = {}

        def root_of(path: Path) -> Beneath:
            root = scope.root_of(path)
            if root not in roots:
                roots[root] = held.enter_context(Beneath(root, *where(scope)))
            return roots[root]

        done: list[Change] = []
        for change in result.changes:
            try:
                _do(change, root_of(change.path))
            except (OSError, SetupError) as exc:
                for made in reversed(done):
                    with contextlib.suppress(OSError, SetupError):
                        _do(Change(made.path, made.kind, made.after, made.before), root_of(made.path))
                if isinstance(exc, SetupError):
                    raise  # a link out of the root: the error names it, and says setup changed nothing
                raise SetupError(f"Writing {scope.show(change.path)} failed: {exc.strerror or exc}.",
                                 "fix that (room on the disk, write access) and rerun; the changes made before it "
                                 "were undone, setup changed nothing.") from exc
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
