"""Keep setup's writes inside the folder they were meant for: no write, removal or new folder goes through a
symbolic link (the file itself or any folder above it) whose target lies outside that root.

Links that stay inside the root are followed: a project that links ``.claude/skills`` to its own ``skills/`` keeps
working. The root is the project for project scope; for ``--user`` it is HOME, or the folder an environment
variable names (``CODEX_HOME``, ``CLAUDE_CONFIG_DIR``, ``XDG_CONFIG_HOME``) when that lies outside HOME.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import SetupError


@dataclass(frozen=True)
class Escape:
    """One link on the way to a target that leads out of its root."""

    link: Path
    points_to: str  # what the link says (os.readlink)
    resolved: str  # where that ends up
    root: Path


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def escape(path: Path, root: Path) -> Escape | None:
    """The first link from ``root`` down to ``path`` (included) whose target is outside ``root``, if any."""
    real_root = os.path.realpath(root)
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if not os.path.islink(current):
            if not current.exists():
                return None  # nothing below a missing folder exists yet: setup creates it inside
            continue
        resolved = os.path.realpath(current)
        if not _inside(resolved, real_root):
            return Escape(current, os.readlink(current), resolved, root)
    return None


def refuse_escapes(targets: Iterable[tuple[Path, Path]], where: str, fix_hint: str = "",
                   who: str = "setup") -> None:
    """Raise one ``SetupError`` naming every link that would carry a write out of its root (nothing is written).
    ``targets``: (path, root) pairs; ``where``: how to name the root ("the project"); ``who``: the command."""
    found: dict[Path, Escape] = {}
    for path, root in targets:
        hit = escape(path, root)
        if hit and hit.link not in found:
            found[hit.link] = hit
    if found:
        raise refusal(list(found.values()), where, fix_hint, who)


def refusal(found: list[Escape], where: str, fix_hint: str = "", who: str = "setup",
            during: bool = False) -> SetupError:
    """The error naming each link, where it points and the fix. ``during``: the link was met while writing (it
    appeared after the check: ``beneath.py`` refuses it at the write itself)."""
    links = "; ".join(f"{hit.link} is a link to {hit.points_to}" + (
        f" ({hit.resolved})" if hit.points_to != hit.resolved else "") for hit in found)
    when = " It appeared while tunepack was writing, after its check." if during else ""
    return SetupError(f"{links} — outside {where} ({found[0].root}); tunepack {who} does not write through a link "
                      f"that leads out of the folder it writes in.{when}",
                      f"replace the link with a real file or folder (copy what it points to in its place){fix_hint}; "
                      f"{who} changed nothing.")


__all__ = ["Escape", "escape", "refusal", "refuse_escapes"]
