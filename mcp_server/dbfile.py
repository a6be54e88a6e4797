"""SQLite stores (jobs, ledger) that stay readable on a full disk.

Opening a WAL database needs room for its shared-memory file (``-shm``): on a full disk even a read fails
with "disk I/O error". ``read_connection`` then falls back to a read-only view of the database file
(``immutable=1``), so job status, lists and the ledger still answer; writes run under ``errors.disk_guard``
and fail with one DiskFullError, leaving the file as it was.

    with closing(read_connection(path, timeout=30)) as db: ...
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .errors import is_disk_full


def read_connection(path: str | Path, **kwargs) -> sqlite3.Connection:
    db = sqlite3.connect(path, **kwargs)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # opens the WAL, and with it the -shm file
        return db
    except sqlite3.OperationalError as exc:
        db.close()
        if not is_disk_full(exc):
            raise
    return sqlite3.connect(Path(path).resolve().as_uri() + "?immutable=1", uri=True, **kwargs)
