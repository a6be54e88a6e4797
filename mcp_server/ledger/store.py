"""The ledger's SQLite store and its rules: one changed variable per experiment, atomic claims, no
repeat of a recorded failure, a kept result needs its metric, and a plateau rule that says stop.

Life of an experiment: ``proposed`` (planner) → ``running`` (a worker claimed it) → ``keep`` |
``discard`` | ``crash`` (the worker recorded it; a reviewer may re-classify it). Claims run inside
``BEGIN IMMEDIATE`` transactions, so two workers never take the same experiment, even from two
processes.
"""

from __future__ import annotations

import builtins
import json
import re
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..dbfile import read_connection
from ..errors import LedgerError, disk_guard
from ..home import home_dir
from .model import (
    FINISHED,
    STATUSES,
    VARIABLE,
    Experiment,
    Plateau,
    check_bounded,
    clean_text,
    config_hash_of,
    direction_for,
    is_better,
    utc_now,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    project TEXT NOT NULL,
    id INTEGER NOT NULL,
    hypothesis TEXT NOT NULL,
    parent INTEGER,
    variable TEXT NOT NULL,
    value TEXT,
    expected TEXT,
    config_hash TEXT NOT NULL,
    config TEXT,
    status TEXT NOT NULL,
    worker TEXT,
    job_id TEXT,
    metric_name TEXT,
    metric_value REAL,
    note TEXT,
    do_not_repeat INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    claimed_at TEXT,
    finished_at TEXT,
    finished_seq INTEGER,
    PRIMARY KEY (project, id)
);
CREATE INDEX IF NOT EXISTS experiments_status ON experiments (project, status);
"""


class Ledger:
    """One project's experiments, numbered from 1 in each project. ``Ledger("my-sweep")``; ``path`` overrides
    the SQLite file."""

    def __init__(self, project: str = "default", path: str | Path | None = None):
        project = (project or "").strip()
        if not project or len(project) > 120:
            raise LedgerError("A ledger project needs a name (1-120 characters).", "pass e.g. project='qwen3-sft'.")
        self.project = project
        self.path = Path(path) if path else home_dir("ledger") / "ledger.db"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_file():
            with self._connect() as db:
                present = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
            if set(re.findall(r"IF NOT EXISTS (\w+)", SCHEMA)) <= present:
                return  # set up already: nothing to write (so a full disk still lets the ledger be read)
        with disk_guard("Opening the ledger", self.path.parent), self._connect(write=True) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    # --- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _connect(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection; a reader on a disk too full to open the WAL gets a read-only view (``dbfile``)."""
        connect = sqlite3.connect if write else read_connection
        db = connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA busy_timeout=30000")
        try:
            yield db
        finally:
            db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the database's write lock at once (BEGIN IMMEDIATE)."""
        with disk_guard("Writing the ledger", self.path.parent), self._connect(write=True) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def _row(self, db: sqlite3.Connection, experiment_id: int) -> sqlite3.Row:
        in_range = -(2**63) <= experiment_id < 2**63  # SQLite's INTEGER; no experiment has an id beyond it
        row = db.execute("SELECT * FROM experiments WHERE id = ? AND project = ?",
                         (experiment_id, self.project)).fetchone() if in_range else None
        if row is None:
            raise LedgerError(f"Project '{self.project}' has no experiment #{experiment_id}.",
                              "list them with ledger_list (`tunepack ledger list -p PROJECT`).")
        return row

    @staticmethod
    def _model(row: sqlite3.Row) -> Experiment:
        data = {k: row[k] for k in row.keys() if k not in ("config", "finished_seq")}
        data["do_not_repeat"] = bool(data["do_not_repeat"])
        return Experiment(**data)

    # --- the loop -------------------------------------------------------------------------

    def propose(self, hypothesis: str, variable: str, value: object = None, *, parent: int | None = None,
                expected: str | None = None, config: dict | None = None, note: str | None = None) -> Experiment:
        """Add a proposed experiment that changes one variable of ``parent`` (or a baseline)."""
        hypothesis, variable = " ".join((hypothesis or "").split()), (variable or "").strip()
        if not hypothesis:
            raise LedgerError("An experiment needs a hypothesis.",
                              "say what you expect and why, e.g. 'a 2x learning rate converges faster on 2k rows'.")
        if not VARIABLE.fullmatch(variable):
            raise LedgerError(f"'{variable}' is not one variable name: an experiment changes exactly one variable.",
                              "name one config key (e.g. training.learning_rate) and split multi-variable changes "
                              "into separate experiments.")
        text = None if value is None else (value if isinstance(value, str) else json.dumps(value))
        check_bounded(hypothesis=hypothesis, value=text, expected=expected, note=note)
        hypothesis, text, expected, note = clean_text(hypothesis), clean_text(text), clean_text(expected), clean_text(note)
        with self._write() as db:
            parent_hash = self._row(db, parent)["config_hash"] if parent is not None else None
            digest = config_hash_of(config, parent_hash=parent_hash, variable=variable, value=text)
            for row in db.execute("SELECT * FROM experiments WHERE project = ? AND config_hash = ?",
                                  (self.project, digest)).fetchall():
                if row["do_not_repeat"] or row["status"] != "crash":
                    why = "marked do-not-repeat" if row["do_not_repeat"] else f"status {row['status']}"
                    raise LedgerError(
                        f"This repeats experiment #{row['id']} ({row['variable']} = {row['value']}, {why}).",
                        "propose a different change (ledger_list shows what was tried); if that verdict was wrong "
                        f"(an early stop on noise, a crash whose cause is fixed), lift it with ledger_record("
                        f"project='{self.project}', experiment_id={row['id']}, status='{row['status']}', "
                        "do_not_repeat=false) — CLI: `tunepack ledger record ... --may-repeat`.")
            new_id = db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM experiments WHERE project = ?",
                                (self.project,)).fetchone()[0]  # numbered per project, under the write lock
            db.execute(
                "INSERT INTO experiments (project, id, hypothesis, parent, variable, value, expected, config_hash, "
                "config, status, note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'proposed', ?, ?)",
                (self.project, new_id, hypothesis, parent, variable, text, expected, digest,
                 json.dumps(config, sort_keys=True) if config is not None else None, note, utc_now()))
            return self._model(self._row(db, new_id))

    def claim(self, worker: str, experiment_id: int | None = None) -> Experiment | None:
        """Take the oldest proposed experiment (or the given one) for ``worker``; None when none is left."""
        worker = (worker or "").strip()
        if not worker:
            raise LedgerError("A claim needs the worker's name.", "pass e.g. worker='worker-1'.")
        with self._write() as db:
            if experiment_id is None:
                row = db.execute("SELECT * FROM experiments WHERE project = ? AND status = 'proposed' "
                                 "ORDER BY id LIMIT 1", (self.project,)).fetchone()
                if row is None:
                    return None
            else:
                row = self._row(db, experiment_id)
                if row["status"] != "proposed":
                    taken = f" by {row['worker']}" if row["worker"] else ""
                    raise LedgerError(f"Experiment #{experiment_id} is {row['status']}{taken}, not proposed.",
                                      "claim another one (omit the id to take the oldest proposed).")
            db.execute("UPDATE experiments SET status = 'running', worker = ?, claimed_at = ? "
                       "WHERE project = ? AND id = ?", (worker, utc_now(), self.project, row["id"]))
            return self._model(self._row(db, row["id"]))

    def record(self, experiment_id: int, status: str, *, metric_value: float | None = None,
               metric_name: str | None = None, job_id: str | None = None, note: str | None = None,
               do_not_repeat: bool | None = None) -> Experiment:
        """Record a running experiment's job id (status 'running') or its outcome (keep | discard | crash).
        A finished experiment may be recorded again: a reviewer's re-classification; notes accumulate."""
        if status not in ("running", *FINISHED):
            raise LedgerError(f"'{status}' is not a status to record.", "use running (to attach a job id), "
                              "keep, discard or crash.")
        check_bounded(note=note, metric_name=metric_name, job_id=job_id)
        with self._write() as db:
            row = self._row(db, experiment_id)
            if row["status"] == "proposed":
                raise LedgerError(f"Experiment #{experiment_id} is still proposed; nobody claimed it.",
                                  "claim it first (ledger_claim) so two workers never run it.")
            if status == "running" and row["status"] != "running":
                raise LedgerError(f"Experiment #{experiment_id} already finished ({row['status']}).",
                                  "record keep, discard or crash to re-classify it.")
            name = metric_name or row["metric_name"] or (self._metric(db) if metric_value is not None else None)
            if metric_value is not None and not name:
                raise LedgerError("A metric value needs its name.", "pass metric_name, e.g. 'eval/humaneval/pass@1'.")
            established = self._metric(db)
            if metric_value is not None and established and name != established:
                raise LedgerError(f"Project '{self.project}' ranks experiments on '{established}', not '{name}'.",
                                  f"record '{established}' (put other numbers in the note) or use another project.")
            value = metric_value if metric_value is not None else row["metric_value"]
            if status == "keep" and value is None:
                raise LedgerError(f"Keeping #{experiment_id} needs its metric: a kept result without evidence "
                                  "cannot be compared.", "pass metric_name and metric_value (from eval_results or "
                                  "tracking_summary), or record discard/crash.")
            if do_not_repeat is not None:
                dnr = do_not_repeat
            elif status == row["status"]:
                dnr = bool(row["do_not_repeat"])
            else:  # a discarded idea is not tried again; a crash may be, once its cause is fixed
                dnr = status == "discard"
            notes = "; ".join(n for n in (row["note"], clean_text(note)) if n) or None
            finishing = status in FINISHED
            seq = (db.execute("SELECT COALESCE(MAX(finished_seq), 0) + 1 FROM experiments").fetchone()[0]
                   if finishing and row["finished_seq"] is None else row["finished_seq"])
            db.execute("UPDATE experiments SET status = ?, metric_name = ?, metric_value = ?, job_id = COALESCE(?, "
                       "job_id), note = ?, do_not_repeat = ?, finished_at = COALESCE(finished_at, ?), finished_seq = ? "
                       "WHERE project = ? AND id = ?",
                       (status, name if value is not None else row["metric_name"], value, job_id, notes, int(dnr),
                        utc_now() if finishing else None, seq, self.project, experiment_id))
            return self._model(self._row(db, experiment_id))

    # --- reading --------------------------------------------------------------------------

    def _metric(self, db: sqlite3.Connection) -> str | None:
        row = db.execute("SELECT metric_name FROM experiments WHERE project = ? AND metric_name IS NOT NULL "
                         "ORDER BY finished_seq LIMIT 1", (self.project,)).fetchone()
        return row[0] if row else None

    def metric(self) -> str | None:
        """The metric this project ranks on (the first one recorded)."""
        with self._connect() as db:
            return self._metric(db)

    def get(self, experiment_id: int) -> Experiment:
        with self._connect() as db:
            return self._model(self._row(db, experiment_id))

    def list(self, status: str | None = None, variable: str | None = None, worker: str | None = None,
             limit: int | None = None) -> builtins.list[Experiment]:
        """Experiments oldest first, optionally filtered; ``limit`` keeps the newest N."""
        if status is not None and status not in STATUSES:
            raise LedgerError(f"'{status}' is not a status.", f"use one of {', '.join(STATUSES)}.")
        sql, args = "SELECT * FROM experiments WHERE project = ?", [self.project]
        for column, wanted in (("status", status), ("variable", variable), ("worker", worker)):
            if wanted is not None:
                sql += f" AND {column} = ?"
                args.append(wanted)
        with self._connect() as db:
            rows = [self._model(r) for r in db.execute(sql + " ORDER BY id", args).fetchall()]
        return rows[-limit:] if limit else rows

    def finished(self) -> builtins.list[Experiment]:
        """Finished experiments in the order they finished."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM experiments WHERE project = ? AND finished_seq IS NOT NULL "
                              "ORDER BY finished_seq", (self.project,)).fetchall()
        return [self._model(r) for r in rows if r["status"] in FINISHED]

    def counts(self) -> dict[str, int]:
        with self._connect() as db:
            found = dict(db.execute("SELECT status, COUNT(*) FROM experiments WHERE project = ? GROUP BY status",
                                    (self.project,)).fetchall())
        return {s: found.get(s, 0) for s in STATUSES}

    def best(self, metric: str | None = None, direction: str | None = None) -> Experiment | None:
        """The finished experiment with the best metric value (keep or discard; crashes never count)."""
        metric = metric or self.metric()
        direction = direction or direction_for(metric)
        best = None
        for e in self.finished():
            if e.status != "crash" and e.metric_name == metric and e.metric_value is not None:
                if best is None or is_better(e.metric_value, best.metric_value, direction, 0.0):
                    best = e
        return best

    def plateau(self, k: int = 3, direction: str | None = None, metric: str | None = None,
                min_delta: float = 0.0) -> Plateau:
        """Stop when the last ``k`` finished experiments brought no improvement over the best before them."""
        if k < 1:
            raise LedgerError(f"k={k}: the plateau rule needs k >= 1.", "use e.g. k=3.")
        metric = metric or self.metric()
        direction = direction or direction_for(metric)
        done = self.finished()
        best, best_index = None, -1
        for i, e in enumerate(done):
            if e.status != "crash" and e.metric_name == metric and e.metric_value is not None \
                    and is_better(e.metric_value, best.metric_value if best else None, direction, min_delta):
                best, best_index = e, i
        since = len(done) - 1 - best_index
        stop = since >= k
        if best is None:
            reason = (f"{len(done)} finished experiments and none has a metric: stop and fix the evaluation."
                      if stop else f"{len(done)} finished, none with a metric yet (stop after {k} without one).")
        elif stop:
            reason = (f"No improvement over #{best.id} ({metric} = {best.metric_value:g}) in the last {since} finished "
                      f"experiments (k = {k}): stop proposing, write the report.")
        else:
            reason = (f"Best is #{best.id} ({metric} = {best.metric_value:g}, {direction}); {since} finished since "
                      f"(stop after {k} without improvement).")
        return Plateau(should_stop=stop, reason=reason, k=k, metric=metric, direction=direction,
                       best_id=best.id if best else None, best_value=best.metric_value if best else None,
                       since_best=since, finished=len(done))

    def blocked(self, variable: str | None = None, value: object = None,
                config_hash: str | None = None) -> builtins.list[Experiment]:
        """Do-not-repeat experiments, optionally only those matching a variable (and value) or a config hash."""
        text = None if value is None else (value if isinstance(value, str) else json.dumps(value))
        return [e for e in self.list() if e.do_not_repeat
                and (variable is None or e.variable == variable)
                and (text is None or e.value == text)
                and (config_hash is None or e.config_hash == config_hash)]

    @classmethod
    def projects(cls, path: str | Path | None = None) -> builtins.list[str]:
        db_path = Path(path) if path else home_dir("ledger") / "ledger.db"
        if not db_path.is_file():
            return []
        with sqlite3.connect(db_path, timeout=30) as db:
            try:
                return [r[0] for r in db.execute("SELECT DISTINCT project FROM experiments ORDER BY project")]
            except sqlite3.OperationalError:
                return []
