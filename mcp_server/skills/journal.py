"""Crash-safe writes of a skill folder: several files change together or not at all, as seen by any reader.

A pitfall touches three files (``references/pitfalls.md``, ``SKILL.md``'s list and version, ``CHANGELOG.md``)
that must agree. ``commit`` writes each new text to a temporary file beside its target, then a small journal
naming the renames (atomically), then renames each temporary file over its target and removes the journal. A
write that fails (a full disk) or a writer killed before the journal exists leaves the old files; one killed
after leaves a journal that ``recover`` — run under the folder's lock by every skills call before it reads —
finishes. Renames need no room, so a full disk never leaves a change half-done.

    with folder_lock(folder):
        recover(folder)
        commit(folder, {folder / "SKILL.md": text, …})
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from filelock import FileLock

from ..errors import disk_guard

JOURNAL = ".pitfalls-journal.json"
LOCK = ".pitfalls.lock"
_LOCKS: dict[str, FileLock] = {}  # one lock object per folder, so nested holders in one thread never deadlock


def folder_lock(folder: Path) -> FileLock:
    key = str(Path(folder).resolve() / LOCK)
    if key not in _LOCKS:
        _LOCKS[key] = FileLock(key, timeout=60)
    return _LOCKS[key]


def _temp_copy(path: Path, text: str) -> Path:
    """``text`` in a fsynced temporary file beside ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return Path(tmp)


def commit(folder: Path, files: dict[Path, str]) -> None:
    """Write ``files`` (paths inside ``folder``) as one change. Call it holding ``folder_lock(folder)``."""
    folder = Path(folder)
    temps: list[Path] = []
    with disk_guard("Writing the skill", folder, setting="TUNEPACK_SKILLS_DIR"):
        try:
            for path, text in files.items():
                temps.append(_temp_copy(Path(path), text))
            plan = {str(t.relative_to(folder)): str(Path(p).relative_to(folder))
                    for t, p in zip(temps, files, strict=True)}
            os.replace(_temp_copy(folder / JOURNAL, json.dumps(plan)), folder / JOURNAL)
        except BaseException:
            for tmp in temps:
                tmp.unlink(missing_ok=True)
            raise
    _apply(folder)


def _apply(folder: Path) -> None:
    """Rename the journal's temporary files over their targets (again, if a killed writer began), then drop it."""
    journal = folder / JOURNAL
    for tmp, target in json.loads(journal.read_text(encoding="utf-8")).items():
        if (folder / tmp).exists():
            os.replace(folder / tmp, folder / target)
    journal.unlink()


def pending(folder: Path) -> bool:
    """True when a killed writer left work behind (a journal or temporary files)."""
    folder = Path(folder)
    return (folder / JOURNAL).exists() or any(folder.glob(".*.tmp")) or any(folder.glob("references/.*.tmp"))


def recover(folder: Path) -> bool:
    """Finish a change a killed writer left (journal), then drop its other temporary files; True if anything was
    done. Call it holding ``folder_lock(folder)``."""
    folder = Path(folder)
    if not pending(folder):
        return False
    if (folder / JOURNAL).exists():
        _apply(folder)
    for stale in [*folder.glob(".*.tmp"), *folder.glob("references/.*.tmp")]:
        stale.unlink(missing_ok=True)
    return True


def ensure_consistent(folder: Path) -> None:
    """Recover ``folder`` if a killed writer left work behind (cheap when it did not)."""
    if pending(folder):
        with folder_lock(folder):
            recover(folder)
