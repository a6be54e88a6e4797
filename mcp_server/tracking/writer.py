"""Write to Trackio from the agent's side: runs for evaluations and the agent's own notes.

Uses the trackio library itself (imported on first use; the server does not load it at start-up)
with its prints sent to stderr, since stdout may be the MCP protocol stream.
"""

from __future__ import annotations

import contextlib
import sys

from ..errors import TrackingError

_open_runs: dict[tuple[str, str], object] = {}


def _trackio():
    from ..errors import require_extra

    require_extra("trackio", "train")
    import trackio

    return trackio


def start_run(project: str, run: str, config: dict | None = None) -> None:
    trackio = _trackio()
    with contextlib.redirect_stdout(sys.stderr):
        _open_runs[(project, run)] = trackio.init(project=project, name=run, config=config or {}, resume="allow")


def log(project: str, run: str, metrics: dict[str, float], step: int | None = None) -> None:
    handle = _open_runs.get((project, run))
    if handle is None:
        raise TrackingError(f"Run '{run}' of project '{project}' is not open in this server.",
                            "start it first with tracking_start (runs started by training jobs are written by the job).")
    with contextlib.redirect_stdout(sys.stderr):
        handle.log(metrics, step=step)


def finish(project: str, run: str) -> None:
    handle = _open_runs.pop((project, run), None)
    if handle is None:
        raise TrackingError(f"Run '{run}' of project '{project}' is not open in this server.",
                            "nothing to finish; list open runs with tracking_runs.")
    with contextlib.redirect_stdout(sys.stderr):
        handle.finish()
