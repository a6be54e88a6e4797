"""Where tunepack keeps its state: one home folder (jobs, registry, built models).

``TUNEPACK_HOME`` overrides the default (``~/.cache/tunepack``); tests point it at a temp dir.
"""

from __future__ import annotations

from pathlib import Path

from . import settings


def tunepack_home() -> Path:
    path = settings.home_root()
    path.mkdir(parents=True, exist_ok=True)
    return path


def home_dir(*parts: str) -> Path:
    """A sub-folder of the home, created on first use."""
    path = tunepack_home().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def trackio_dir() -> Path:
    """The folder Trackio writes its SQLite files to (``TRACKIO_DIR``, else Trackio's default)."""
    return settings.trackio_root()
