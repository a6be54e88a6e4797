"""Where tunepack keeps its state: one home folder (jobs, registry, built models).

``TUNEPACK_HOME`` overrides the default (``~/.cache/tunepack``); tests point it at a temp dir.
"""

from __future__ import annotations

import os
from pathlib import Path


def tunepack_home() -> Path:
    root = os.environ.get("TUNEPACK_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tunepack"
    )
    path = Path(root).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def home_dir(*parts: str) -> Path:
    """A sub-folder of the home, created on first use."""
    path = tunepack_home().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def trackio_dir() -> Path:
    """The folder Trackio writes its SQLite files to (``TRACKIO_DIR``, else Trackio's default)."""
    env = os.environ.get("TRACKIO_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return Path(os.environ.get("HF_HOME") or os.path.expanduser("~/.cache/huggingface")) / "trackio"
