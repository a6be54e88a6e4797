"""Write-then-rename folders shared by the writers that must never leave half a result (registry versions,
exports): a hidden staging folder named after the writing process, and the clean-up of those whose writer died."""

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
