"""Write to Trackio from the agent's side: runs for evaluations and the agent's own notes.

Uses the trackio library itself (imported on first use; the server does not load it at start-up)
with its prints sent to stderr, since stdout may be the MCP protocol stream.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

from ..errors import TrackingError

if TYPE_CHECKING:
    from trackio import Run

_open_runs: dict[tuple[str, str], Run] = {}
MAX_NAME_CHARS = 200
MAX_OPEN_RUNS = 32


def _trackio():
    from ..errors import require_extra

    require_extra("trackio", "train")
    import trackio

    return trackio


def _check(project: str, run: str) -> None:
    for what, name in (("project", project), ("run", run)):
        if not name.strip() or len(name) > MAX_NAME_CHARS or not name.isprintable():
            raise TrackingError(f"'{name[:60]}' is not a Trackio {what} name ({len(name)} characters).",
                                f"use a short printable name (at most {MAX_NAME_CHARS} characters), e.g. the "
                                "config's tracking.project and a run name like 'eval-v2'.")
    if (project, run) not in _open_runs and len(_open_runs) >= MAX_OPEN_RUNS:
        raise TrackingError(f"{len(_open_runs)} runs are open in this server already.",
                            "finish the runs you are done with (tracking_finish) before opening another.")


def start_run(project: str, run: str, config: dict | None = None, group: str | None = None) -> None:
    _check(project, run)
    trackio = _trackio()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            handle = trackio.init(project=project, name=run, group=group, config=config or {}, resume="allow")
    except ValueError as exc:  # e.g. a config key Trackio reserves ('_…')
        raise TrackingError(f"Trackio refused to open run '{run}': {exc}",
                            "rename the config keys it names (keys starting with '_' are Trackio's own).") from None
    _open_runs[(project, run)] = handle


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
    current = _trackio().context_vars.current_run
    if current.get() is handle:  # else trackio's exit hook finishes it again, printing to stdout (the MCP stream)
        current.set(None)
