"""Listing the files under a folder an agent named, within bounds.

    files = walk_files(folder, keep=lambda p: p.suffix == ".jsonl")

At most ``MAX_ENTRIES`` entries are looked at; symlinked folders are followed once each (a loop ends); corners
that cannot be read (``/proc``, a folder without permission) are skipped. A wrong path — ``/``, a home folder —
answers with an error and its fix instead of walking the whole disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .errors import InputError

MAX_ENTRIES = 50_000


def _never(_: Path) -> bool:
    return False


def _always(_: Path) -> bool:
    return True


def walk_files(folder: str | Path, keep: Callable[[Path], bool] = _always, *,
               stop_at: Callable[[Path], bool] = _never, limit: int = MAX_ENTRIES) -> list[Path]:
    """The files under ``folder`` for which ``keep`` holds, sorted; a folder for which ``stop_at`` holds is listed
    itself instead of being entered. InputError when the folder holds more than ``limit`` entries."""
    found: list[Path] = []
    stack, visited, seen = [Path(folder)], set(), 0
    while stack:
        here = stack.pop()
        try:
            real = here.resolve()
            if real in visited:
                continue
            visited.add(real)
            if stop_at(here):
                found.append(here)
                continue
            with os.scandir(here) as listing:
                entries = list(listing)
        except (OSError, RuntimeError):
            continue
        seen += len(entries)
        if seen > limit:
            raise InputError(f"'{folder}' holds more than {limit:,} files and folders; it is not a dataset or "
                             "session folder.", "point at the folder (or the files) of the data itself.")
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir():
                    stack.append(path)
                elif entry.is_file() and keep(path):
                    found.append(path)
            except OSError:
                continue
    return sorted(found)
