"""Bring a remote run's curve home: the TUNEPACK_METRIC lines of its job logs into the local Trackio project.

A job on HF Jobs writes Trackio inside its own ephemeral machine (gone when it ends) unless the config names a
Space (``tracking.space_id``) or a self-hosted Trackio server (``tracking.server_url``). Without either, the
run's curve is imported here when the run settles, so one ``trackio show`` shows every run of a sweep, local or
remote. Attempts of one run (a retry resumed from a pushed checkpoint logs some steps again) are merged with
one value per step — the latest attempt's — and steps the local project already holds are left alone, so
importing twice writes nothing the second time.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from datetime import datetime, timezone

from .store import MetricPoint, TrackioStore

_lock = threading.Lock()


def merge_attempts(attempts: list[list[MetricPoint]]) -> list[MetricPoint]:
    """One point per step across attempts given oldest first: a later attempt's step replaces an earlier one's;
    within one attempt, records of one step (a training log and an eval log) are joined."""
    by_step: dict[int, MetricPoint] = {}
    for points in attempts:
        mine: dict[int, MetricPoint] = {}
        for point in points:
            joined = mine.setdefault(point.step, MetricPoint(step=point.step, values={}, logged_at=point.logged_at))
            joined.values.update(point.values)
        by_step.update(mine)
    return [by_step[s] for s in sorted(by_step)]


def held_steps(project: str, run: str) -> set[int]:
    try:
        return {p.step for p in TrackioStore().history(project, run)}
    except Exception:  # no project or no run yet
        return set()


def import_curve(project: str, run: str, points: list[MetricPoint], config: dict | None = None) -> int:
    """Write the points the local project lacks; return how many steps were written."""
    from ..errors import require_extra

    require_extra("trackio", "train")
    from trackio import sqlite_storage

    new = [p for p in points if p.step not in held_steps(project, run)]
    if not new:
        return 0
    now = datetime.now(timezone.utc).isoformat()  # a line from a script that did not stamp it (older runs)
    times = [datetime.fromtimestamp(p.logged_at, timezone.utc).isoformat() if p.logged_at else now for p in new]
    with _lock, contextlib.redirect_stdout(sys.stderr):
        sqlite_storage.SQLiteStorage.bulk_log(project, run, [p.values for p in new], steps=[p.step for p in new],
                                              timestamps=times, config=config)
    return len(new)
