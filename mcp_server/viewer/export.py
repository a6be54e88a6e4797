"""The twin's "parquet export" of a split, made once per revision (the service makes one too).

DuckDB reads the split's files (parquet, JSON Lines/JSON, CSV; Arrow IPC through pyarrow) and writes
one Parquet file with a leading ``__row_idx`` column and small row groups (2,048 rows). Every
endpoint then reads only that file: a page of /rows or a search hit prunes row groups on
``__row_idx`` statistics, so it reads one or two row groups instead of the whole split.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from .backend import UNEXPECTED, ViewerError
from .sources import SUFFIXES, SplitFiles

ROW_IDX = "__row_idx"
ROW_GROUP_SIZE = 2048


class ExportInfo(BaseModel):
    split: str
    num_rows: int
    num_columns: int
    num_bytes_original_files: int
    num_bytes_parquet_files: int
    num_bytes_memory: int


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _file_list(files: list[Path]) -> str:
    return "[" + ", ".join(sql_str(str(f)) for f in files) + "]"


def _arrow_reader(path: Path):
    try:
        import pyarrow.ipc as ipc
    except ImportError:
        raise ViewerError(f"Reading '{path}' (Arrow IPC) needs pyarrow, which is not installed.",
                          "pip install pyarrow (it comes with `datasets`), or export the data to parquet/jsonl.",
                          UNEXPECTED) from None
    try:
        return ipc.open_stream(open(path, "rb"))
    except Exception:
        return ipc.open_file(open(path, "rb")).to_table().to_reader()


def _source_sql(cur, files: list[Path], full_sample: bool) -> str:
    """A SELECT over all files of a split, their columns unioned by name, in file order."""
    groups: dict[str, list[Path]] = {}
    for f in files:
        groups.setdefault(SUFFIXES[f.suffix.lower()], []).append(f)
    parts = []
    for fmt, group in groups.items():
        if fmt == "parquet":
            parts.append(f"SELECT * FROM read_parquet({_file_list(group)}, union_by_name = true)")
        elif fmt == "json":
            sample = ", sample_size = -1" if full_sample else ""
            parts.append(f"SELECT * FROM read_json({_file_list(group)}, union_by_name = true{sample})")
        elif fmt == "csv":
            parts.append(f"SELECT * FROM read_csv({_file_list(group)}, union_by_name = true)")
        else:
            for i, f in enumerate(group):
                name = f"__arrow_{len(parts)}_{i}"
                cur.register(name, _arrow_reader(f))
                parts.append(f"SELECT * FROM {name}")
    return " UNION ALL BY NAME ".join(parts)


def build_export(cur, split: SplitFiles, out: Path) -> ExportInfo:
    """Write the split's export to ``out`` (atomically) and describe it."""
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    error = None
    for full_sample in (False, True):  # JSON types inferred from a sample first, the whole file if that fails
        try:
            source = _source_sql(cur, split.files, full_sample)
            cur.execute(f"COPY (SELECT (row_number() OVER ()) - 1 AS {ROW_IDX}, * FROM ({source})) TO "
                        f"{sql_str(str(tmp))} (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_SIZE}, COMPRESSION zstd)")
            break
        except Exception as exc:  # duckdb.Error, pyarrow errors
            error = exc
            tmp.unlink(missing_ok=True)
    else:
        first = str(error).strip().splitlines()[0][:300] if error else "unknown error"
        names = ", ".join(f.name for f in split.files[:5])
        raise ViewerError(f"DuckDB cannot read the '{split.name}' split ({names}): {first}",
                          "check the files are valid (JSON Lines: one JSON object per line; CSV with a header), "
                          "or convert them to parquet.", UNEXPECTED)
    os.replace(tmp, out)
    target = sql_str(str(out))
    num_rows, memory = cur.execute(f"SELECT sum(num_rows) FILTER (WHERE column_id = 0), sum(total_uncompressed_size) "
                                   f"FROM parquet_metadata({target})").fetchall()[0]
    columns = cur.execute(f"SELECT * FROM read_parquet({target}) LIMIT 0").columns
    return ExportInfo(split=split.name, num_rows=int(num_rows or 0), num_columns=len(columns) - 1,
                      num_bytes_original_files=sum(f.stat().st_size for f in split.files),
                      num_bytes_parquet_files=out.stat().st_size, num_bytes_memory=int(memory or 0))
