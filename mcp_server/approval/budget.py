"""The spending budget, per project and per day, under one daily cap over all projects, persisted in the
tunepack home.

A paid job is charged its worst case (price × timeout × replicas) when it is submitted and the
charge is reconciled to the real runtime when it ends. A submission that would take the day's
charges over the project's limit, or everybody's charges over the total cap, is refused (a fresh project
name gets a project limit, never a fresh total). Limits are set by a person (``tunepack budget set``), never
by the agent; the defaults come from ``TUNEPACK_DAILY_BUDGET_USD`` (10 USD when unset) and
``TUNEPACK_DAILY_TOTAL_USD`` (when unset: the largest project limit). In the same OS account an agent can
edit this file: the budget is then a seatbelt; a custodian account that alone holds it makes it a wall.
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
    total_limit_usd: float = 0.0
    total_charged_usd: float = 0.0


def today(now: float | None = None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now or time.time()))


def _refusal(project: str, day: str, amount: float, left: float, limit: float, total_left: float,
             total: float) -> ApprovalError | None:
    wait = ("shorten timeout_s or pick a cheaper flavor, wait for running jobs to end (their charge shrinks to the "
            "real runtime), or ask the human to raise it: ")
    if amount > left + 1e-9:
        return ApprovalError(f"Budget refused: this job may cost up to ${amount:.2f}, and project '{project}' has "
                             f"${left:.2f} of its ${limit:.2f} daily budget left ({day}).",
                             wait + f"`tunepack budget set {project} USD`.")
    if amount > total_left + 1e-9:
        return ApprovalError(f"Budget refused: this job may cost up to ${amount:.2f}, and all projects together have "
                             f"${total_left:.2f} of the ${total:.2f} daily cap left ({day}); another project name "
                             "does not add to it.", wait + "`tunepack budget set --total USD`.")
    return None


class Budget:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else home_dir("approval") / "budget.db"
        with closing(self._db()) as db:
            db.execute("CREATE TABLE IF NOT EXISTS limits (project TEXT PRIMARY KEY, daily_usd REAL NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS total (one INTEGER PRIMARY KEY CHECK (one = 1), "
                       "daily_usd REAL NOT NULL)")
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

    def total_limit(self) -> float:
        """The daily cap over all projects: set by a person, else TUNEPACK_DAILY_TOTAL_USD, else the largest
        project limit (so new project names never add up to more than one project could spend)."""
        with closing(self._db()) as db:
            row = db.execute("SELECT daily_usd FROM total").fetchone()
            (largest,) = db.execute("SELECT MAX(daily_usd) FROM limits").fetchone()
        if row:
            return row[0]
        default = settings.daily_budget_usd(DEFAULT_DAILY_USD)
        return settings.daily_total_usd() or max(default, largest or 0.0)

    def set_total(self, daily_usd: float) -> None:
        with closing(self._db()) as db:
            db.execute("INSERT INTO total VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET daily_usd = excluded.daily_usd",
                       (daily_usd,))

    def status(self, project: str, now: float | None = None) -> BudgetStatus:
        project, day = _project(project), today(now)
        with closing(self._db()) as db:
            charged, open_ = db.execute(
                "SELECT COALESCE(SUM(amount), 0), COALESCE(SUM(1 - final), 0) FROM charges WHERE project = ? AND day = ?",
                (project, day)).fetchone()
            (everybody,) = db.execute("SELECT COALESCE(SUM(amount), 0) FROM charges WHERE day = ?", (day,)).fetchone()
        limit, total = self.limit(project), self.total_limit()
        return BudgetStatus(project=project, day=day, limit_usd=limit, charged_usd=round(charged, 4),
                            remaining_usd=round(min(limit - charged, total - everybody), 4), open_charges=open_,
                            total_limit_usd=total, total_charged_usd=round(everybody, 4))

    def charge(self, project: str, job_key: str, amount: float, price_per_hour: float, replicas: int,
               now: float | None = None) -> None:
        """Reserve ``amount`` (the worst case) or refuse when the day's budget cannot cover it. Charging a pending key
        again replaces its reservation (a caller killed between reserving and submitting, started again)."""
        day = today(now)
        limit, total = self.limit(project), self.total_limit()
        with closing(self._db()) as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM charges WHERE job_id = ? AND final = 0 AND job_id LIKE 'pending-%'", (job_key,))
            (charged,) = db.execute("SELECT COALESCE(SUM(amount), 0) FROM charges WHERE project = ? AND day = ?",
                                    (project, day)).fetchone()
            (everybody,) = db.execute("SELECT COALESCE(SUM(amount), 0) FROM charges WHERE day = ?", (day,)).fetchone()
            refusal = _refusal(project, day, amount, limit - charged, limit, total - everybody, total)
            if refusal:
                db.execute("ROLLBACK")
                raise refusal
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
