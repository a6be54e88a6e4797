"""Write-then-rename, shared by the writers that must never leave half a result: a file written in one step
(rendered scripts, a README section), and for folders (registry versions, exports) a hidden staging folder named
after the writing process, with the clean-up of those whose writer died."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def process_alive(pid: int) -> bool:
    """True while a process with this id exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def staging_folder(parent: Path, prefix: str) -> Path:
    """A fresh ``PREFIX<pid>-…`` folder in ``parent``; first removes those left by writers that were killed."""
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f"{prefix}*"):
        pid = stale.name[len(prefix):].split("-")[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))


def write_text_atomically(path: Path, text: str, mode: int | None = None) -> Path:
    """``text`` into ``path`` through a temporary file beside it and one rename: a reader (or a crash) never sees
    half of it. The file is private (0600) unless ``mode`` says otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)
    return path
