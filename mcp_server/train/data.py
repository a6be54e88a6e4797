"""Reading local training rows without torch: JSON Lines, a JSON array, or Parquet (through DuckDB)."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import DataError


def read_local_rows(path: str) -> list[dict]:
    """Rows of one local file; a malformed line is an error naming the file and line."""
    p = Path(path)
    if p.suffix == ".parquet":
        import duckdb

        rel = duckdb.read_parquet(str(p))
        return [dict(zip(rel.columns, row, strict=True)) for row in rel.fetchall()]
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".json" and text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise DataError(f"'{p}' is not valid JSON: {exc}.", "fix the file or export it as JSON Lines.") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            raise DataError(f"'{p}' line {number} is not valid JSON ({exc}).",
                            "fix or remove that line; each line must hold one JSON object.") from None
    return rows
