"""The spending budget, per project and per day, persisted in the tunepack home.

A paid job is charged its worst case (price × timeout × replicas) when it is submitted and the
charge is reconciled to the real runtime when it ends. A submission that would take the day's
charges over the limit is refused. Limits are set by a person (``tunepack budget set``), never by
the agent; the default comes from ``TUNEPACK_DAILY_BUDGET_USD`` (10 USD when unset).
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

from pydantic import BaseModel

from .. import settings
from ..home import home_dir
from .tokens import ApprovalError

DEFAULT_DAILY_USD = 10.0
MAX_PROJECT_CHARS = 200


def _project(name: str) -> str:
    if not name or len(name) > MAX_PROJECT_CHARS or not name.isprintable():
        raise ApprovalError(f"'{name[:60]}' is not a budget project name ({len(name)} characters).",
                            f"use a short printable name (at most {MAX_PROJECT_CHARS} characters), e.g. the config's "
                            "tracking.project or 'tunepack'.")
    return name


class BudgetStatus(BaseModel):
    project: str
    day: str
    limit_usd: float
    charged_usd: float
    remaining_usd: float
    open_charges: int


def today(now: float | None = None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now or time.time()))


class Budget:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else home_dir("approval") / "budget.db"
        with closing(self._db()) as db:
            db.execute("CREATE TABLE IF NOT EXISTS limits (project TEXT PRIMARY KEY, daily_usd REAL NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS charges (job_id TEXT PRIMARY KEY, project TEXT NOT NULL, "
                       "day TEXT NOT NULL, amount REAL NOT NULL, final INTEGER NOT NULL DEFAULT 0, "
                       "price_per_hour REAL NOT NULL, replicas INTEGER NOT NULL)")

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)

    def limit(self, project: str) -> float:
        project = _project(project)
        with closing(self._db()) as db:
            row = db.execute("SELECT daily_usd FROM limits WHERE project = ?", (project,)).fetchone()
        return row[0] if row else settings.daily_budget_usd(DEFAULT_DAILY_USD)

    def set_limit(self, project: str, daily_usd: float) -> None:
        project = _project(project)
        with closing(self._db()) as db:
            db.execute("INSERT INTO limits VALUES (?, ?) ON CONFLICT(project) DO UPDATE SET daily_usd = excluded.daily_usd",
                       (project, daily_usd))

    def status(self, project: str, now: float | None = None) -> BudgetStatus:
        project, day = _project(project), today(now)
        with closing(self._db()) as db:
            charged, open_ = db.execute(
                "SELECT COALESCE(SUM(amount), 0), COALESCE(SUM(1 - final), 0) FROM charges WHERE project = ? AND day = ?",
                (project, day)).fetchone()
        limit = self.limit(project)
        return BudgetStatus(project=project, day=day, limit_usd=limit, charged_usd=round(charged, 4),
                            remaining_usd=round(limit - charged, 4), open_charges=open_)

    def charge(self, project: str, job_key: str, amount: float, price_per_hour: float, replicas: int,
               now: float | None = None) -> None:
        """Reserve ``amount`` (the worst case) or refuse when the day's budget cannot cover it."""
        day = today(now)
        limit = self.limit(project)
        with closing(self._db()) as db:
            db.execute("BEGIN IMMEDIATE")
            (charged,) = db.execute("SELECT COALESCE(SUM(amount), 0) FROM charges WHERE project = ? AND day = ?",
                                    (project, day)).fetchone()
            if charged + amount > limit + 1e-9:
                db.execute("ROLLBACK")
                raise ApprovalError(
                    f"Budget refused: this job may cost up to ${amount:.2f}, and project '{project}' has "
                    f"${limit - charged:.2f} of its ${limit:.2f} daily budget left ({day}).",
                    "shorten timeout_s or pick a cheaper flavor, wait for running jobs to end (their charge "
                    "shrinks to the real runtime), or ask the human to raise it: `tunepack budget set "
                    f"{project} USD`.")
            db.execute("INSERT INTO charges VALUES (?, ?, ?, ?, 0, ?, ?)",
                       (job_key, project, day, amount, price_per_hour, replicas))
            db.execute("COMMIT")

    def rekey(self, old_key: str, job_id: str) -> None:
        """Attach a reservation made before submission to the job id the backend returned."""
        with closing(self._db()) as db:
            db.execute("UPDATE charges SET job_id = ? WHERE job_id = ?", (job_id, old_key))

    def release(self, job_key: str) -> None:
        """Drop a reservation whose job never started (submission failed)."""
        with closing(self._db()) as db:
            db.execute("DELETE FROM charges WHERE job_id = ? AND final = 0", (job_key,))

    def reconcile(self, job_id: str, runtime_s: float) -> float | None:
        """Replace the worst-case charge by the real cost of a finished job; return it."""
        with closing(self._db()) as db:
            row = db.execute("SELECT price_per_hour, replicas FROM charges WHERE job_id = ? AND final = 0",
                             (job_id,)).fetchone()
            if row is None:
                return None
            actual = round(row[0] * runtime_s / 3600 * row[1], 4)
            db.execute("UPDATE charges SET amount = ?, final = 1 WHERE job_id = ?", (actual, job_id))
        return actual

    def open_job_ids(self) -> list[str]:
        with closing(self._db()) as db:
            return [r[0] for r in db.execute("SELECT job_id FROM charges WHERE final = 0")]
