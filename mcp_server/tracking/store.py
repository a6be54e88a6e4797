"""Read Trackio's local store: projects, runs and metric histories.

Training scripts write through the ``trackio`` library (``init/log/finish``). Reading happens here,
in the light core install, straight from Trackio's per-project SQLite file
(``$TRACKIO_DIR/<project>.db``, tables ``metrics`` and ``configs``) opened read-only, so the MCP
server and the CLI can summarise runs without importing trackio's web stack, and ``TRACKIO_DIR``
can be chosen per call.
"""

from __future__ import annotations

import json
import math
import sqlite3
from contextlib import closing
from pathlib import Path

from pydantic import BaseModel

from ..errors import TrackingError
from ..home import trackio_dir


class MetricPoint(BaseModel):
    step: int
    values: dict[str, float]
    logged_at: float | None = None  # when the training script logged it (seconds since the epoch)


class RunSummary(BaseModel):
    project: str
    run: str
    points: int
    last: dict[str, float]
    first: dict[str, float]
    minimum: dict[str, float]
    maximum: dict[str, float]


MAX_NAME_BYTES = 250  # a file name holds 255 bytes, with ".db"


def _canonical(project: str) -> str:
    return "".join(c for c in project if c.isalnum() or c in "-_").rstrip() or "default"


class TrackioStore:
    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory) if directory else trackio_dir()

    def _connect(self, project: str) -> sqlite3.Connection:
        if len(_canonical(project).encode()) > MAX_NAME_BYTES:
            raise TrackingError(f"The project name is {len(project)} characters long; Trackio keeps each project "
                                "in a file named after it, which cannot be that long.",
                                "use the project name tracking_projects lists (or tracking.project of the config).")
        path = self.directory / f"{_canonical(project)}.db"
        if not path.is_file():
            known = ", ".join(self.projects()) or "none"
            raise TrackingError(
                f"Trackio has no project '{project}' in {self.directory} (projects there: {known}).",
                "check tracking.project in the config and TRACKIO_DIR; a run appears once its script has logged.",
            )
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)

    def projects(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.db"))

    def runs(self, project: str) -> list[str]:
        with closing(self._connect(project)) as db:
            rows = db.execute("SELECT run_name, MIN(id) FROM metrics GROUP BY run_name ORDER BY MIN(id)").fetchall()
        return [r[0] for r in rows]

    def config(self, project: str, run: str) -> dict | None:
        with closing(self._connect(project)) as db:
            row = db.execute("SELECT config FROM configs WHERE run_name = ? ORDER BY id DESC LIMIT 1", (run,)).fetchone()
        return json.loads(row[0]) if row else None

    def history(self, project: str, run: str) -> list[MetricPoint]:
        with closing(self._connect(project)) as db:
            # A name can be reused; the latest run under that name is the one asked for.
            latest = db.execute("SELECT run_id FROM metrics WHERE run_name = ? ORDER BY id DESC LIMIT 1",
                                (run,)).fetchone()
            rows = db.execute("SELECT step, metrics FROM metrics WHERE run_name = ? AND run_id = ? ORDER BY step, id",
                              (run, latest[0])).fetchall() if latest else []
        if not rows:
            raise TrackingError(
                f"Trackio project '{project}' has no run '{run}' (runs: {', '.join(self.runs(project)) or 'none'}).",
                "use one of the listed run names.",
            )
        points = []
        for step, blob in rows:
            values = {k: float(v) for k, v in json.loads(blob).items()
                      if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if values:
                points.append(MetricPoint(step=step, values=values))
        return points

    def summary(self, project: str, run: str) -> RunSummary:
        return summarize(project, run, self.history(project, run))


def points_from_metric_lines(records: list[dict]) -> list[MetricPoint]:
    """MetricPoints from the TUNEPACK_METRIC lines of a job log (remote jobs have no local Trackio)."""
    points = []
    for record in records:
        values = {k: float(v) for k, v in record.items() if k not in ("step", "max_steps", "logged_at")
                  and isinstance(v, (int, float)) and not isinstance(v, bool)}
        if values:
            points.append(MetricPoint(step=int(record.get("step", 0)), values=values,
                                      logged_at=record.get("logged_at")))
    return points


def summarize(project: str, run: str, points: list[MetricPoint]) -> RunSummary:
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    for point in points:
        for key, value in point.values.items():
            first.setdefault(key, value)
            last[key] = value
            if not math.isnan(value):
                low[key] = min(low.get(key, value), value)
                high[key] = max(high.get(key, value), value)
    return RunSummary(project=project, run=run, points=len(points), first=first, last=last,
                      minimum=low, maximum=high)
