"""The local job store: one SQLite table in the tunepack home, shared by the backend (which
inserts and reads) and each job's runner process (which records RUNNING, the exit code and the
final stage itself, so the truth survives a restart of the process that submitted the job)."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from ..dbfile import read_connection
from ..errors import disk_guard

COLUMNS = ("id", "name", "stage", "message", "labels", "command", "env", "timeout_s", "flavor", "created_at",
           "started_at", "ended_at", "exit_code", "runner_pid", "child_pid", "workdir", "log_path", "spec")
SCHEMA = """CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, stage TEXT NOT NULL, message TEXT, labels TEXT NOT NULL,
    command TEXT NOT NULL, env TEXT NOT NULL, timeout_s INTEGER, flavor TEXT, created_at REAL NOT NULL,
    started_at REAL, ended_at REAL, exit_code INTEGER, runner_pid INTEGER, child_pid INTEGER,
    workdir TEXT NOT NULL, log_path TEXT NOT NULL, spec TEXT NOT NULL)"""
JSON_COLUMNS = ("labels", "command", "env", "spec")


class JobStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_file():
            with closing(self._reader()) as db:
                if {r[1] for r in db.execute("PRAGMA table_info(jobs)")} == set(COLUMNS):
                    return  # set up already: nothing to write (so a full disk still lets the store be read)
        with self._writing("Creating the job store"), closing(self._db()) as db, db:
            db.execute("PRAGMA journal_mode=WAL")
            existing = [r[1] for r in db.execute("PRAGMA table_info(jobs)")]
            if existing and set(existing) != set(COLUMNS):  # an older layout: keep it aside, start fresh
                db.execute(f"ALTER TABLE jobs RENAME TO jobs_old_{int(time.time())}")
            db.execute(SCHEMA)

    def _writing(self, action: str):
        """A full disk during a write: one DiskFullError, the file as it was (SQLite rolls the write back)."""
        return disk_guard(action, self.path.parent)

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        return db

    def _reader(self) -> sqlite3.Connection:
        db = read_connection(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        return db

    @staticmethod
    def _decode(row: sqlite3.Row) -> dict:
        out = dict(row)
        for key in JSON_COLUMNS:
            out[key] = json.loads(out[key])
        return out

    def insert(self, **row: object) -> None:
        values = {k: (json.dumps(row[k]) if k in JSON_COLUMNS else row.get(k)) for k in COLUMNS}
        with self._writing("Recording the job"), closing(self._db()) as db, db:
            db.execute(f"INSERT INTO jobs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                       tuple(values.values()))

    def get(self, job_id: str) -> dict | None:
        with closing(self._reader()) as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return self._decode(row) if row else None

    def update(self, job_id: str, *, only_if_stage: tuple[str, ...] | None = None, **fields: object) -> bool:
        """Set fields; with ``only_if_stage`` only while the job is still in one of those stages."""
        sets = ", ".join(f"{k} = ?" for k in fields)
        sql, args = f"UPDATE jobs SET {sets} WHERE id = ?", [*fields.values(), job_id]
        if only_if_stage:
            sql += f" AND stage IN ({', '.join('?' * len(only_if_stage))})"
            args += list(only_if_stage)
        with self._writing(f"Updating job {job_id}"), closing(self._db()) as db, db:
            return db.execute(sql, args).rowcount == 1

    def all(self) -> list[dict]:
        with closing(self._reader()) as db:
            return [self._decode(r) for r in db.execute("SELECT * FROM jobs ORDER BY created_at DESC")]

    def running(self) -> list[dict]:
        with closing(self._reader()) as db:
            return [self._decode(r) for r in db.execute("SELECT * FROM jobs WHERE stage = 'RUNNING'")]
