"""The twin's "parquet export" of a split, made once per revision (the service makes one too).

DuckDB reads the split's files (parquet, JSON Lines/JSON, CSV; Arrow IPC through pyarrow) and writes,
into one folder:

- ``data_N.parquet`` parts of 32 small row groups (≤ 2,048 rows and ≤ 512 KB each) with a leading
  ``__row_idx`` column: a page of /rows or a search hit opens only the parts holding it and prunes row
  groups on ``__row_idx`` statistics, so it decodes one or two small row groups whatever the split's
  size (DuckDB's cost per query grows with the row groups of a file, hence many small parts);
- ``scan.parquet``: ``__row_idx`` and the light columns (numbers, booleans, dates, short strings) in
  large row groups (122,880 rows), for /filter's where/orderby/count scans, which would otherwise pay
  per-row-group overhead hundreds of times.
"""

from __future__ import annotations

import bisect
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .backend import UNEXPECTED, ViewerError
from .features import feature, quote
from .responses import FeatureItem
from .sources import SUFFIXES, SplitFiles

ROW_IDX = "__row_idx"
ROW_GROUP_SIZE = 2048
ROW_GROUP_BYTES = "64KB"  # a fetched row decodes its whole row group: small groups keep scattered pages cheap
ROW_GROUPS_PER_PART = 256
SCAN_ROW_GROUP_SIZE = 122_880
SCAN_FILE = "scan.parquet"
LIGHT_STRING_CHARS = 256  # string columns longer than this on average stay out of the scan file
LIGHT_TYPES = {"bigint", "integer", "smallint", "tinyint", "hugeint", "ubigint", "uinteger", "usmallint",
               "utinyint", "uhugeint", "double", "float", "decimal", "boolean", "date", "time", "timestamp",
               "timestamp_ms", "timestamp_ns", "timestamp_s", "timestamp with time zone", "uuid", "enum"}


class Part(BaseModel):
    file: str
    first: int
    rows: int
    groups: list[int] = []  # rows of each row group, in order: a row is read by reading only its group


class ExportInfo(BaseModel):
    split: str
    num_rows: int
    num_columns: int
    num_bytes_original_files: int
    num_bytes_parquet_files: int
    num_bytes_memory: int
    parts: list[Part]
    scan_columns: list[str]

    def source(self, folder: Path, parts: list[Part] | None = None) -> str:
        files = [str(folder / p.file) for p in (self.parts if parts is None else parts)]
        return f"read_parquet([{', '.join(sql_str(f) for f in files)}])"

    def scan_source(self, folder: Path) -> str:
        return f"read_parquet({sql_str(str(folder / SCAN_FILE))})"

    def locate(self, ids: list[int]) -> dict[tuple[str, int], list[tuple[int, int]]]:
        """(part file, row group) → [(row_idx, offset in the group)] for the rows ``ids``."""
        starts = [p.first for p in self.parts]
        found: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for row in ids:
            part = self.parts[max(bisect.bisect_right(starts, row) - 1, 0)]
            offset = row - part.first
            for group, size in enumerate(part.groups):
                if offset < size:
                    found.setdefault((part.file, group), []).append((row, offset))
                    break
                offset -= size
        return found

    def parts_for(self, ranges: list[tuple[int, int]]) -> dict[str, list[tuple[int, int]]]:
        """Part file → the (first, last) row_idx ranges it holds rows of."""
        starts = [p.first for p in self.parts]
        chosen: dict[str, list[tuple[int, int]]] = {}
        for lo, hi in ranges:
            first = max(bisect.bisect_right(starts, lo) - 1, 0)
            last = max(bisect.bisect_right(starts, hi) - 1, 0)
            for i in range(first, last + 1):
                chosen.setdefault(self.parts[i].file, []).append((lo, hi))
        return chosen


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
        return ipc.open_file(open(path, "rb")).read_all().to_reader()


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


def _write_parts(cur, split: SplitFiles, tmp: Path) -> None:
    error = None
    for full_sample in (False, True):  # JSON types inferred from a sample first, the whole file if that fails
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            source = _source_sql(cur, split.files, full_sample)
            select = f"SELECT (row_number() OVER ()) - 1 AS {ROW_IDX}, * FROM ({source})"
            cur.execute(f"COPY ({select}) TO {sql_str(str(tmp))} (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_SIZE}, "
                        f"ROW_GROUP_SIZE_BYTES '{ROW_GROUP_BYTES}', ROW_GROUPS_PER_FILE {ROW_GROUPS_PER_PART}, "
                        "COMPRESSION zstd)")
            if not list(tmp.glob("*.parquet")):  # no rows: keep one empty part for the schema
                tmp.mkdir(parents=True, exist_ok=True)
                cur.execute(f"COPY ({select} LIMIT 0) TO {sql_str(str(tmp / 'data_0.parquet'))} (FORMAT parquet)")
            return
        except Exception as exc:  # duckdb.Error, pyarrow errors
            error = exc
    shutil.rmtree(tmp, ignore_errors=True)
    first = str(error).strip().splitlines()[0][:300] if error else "unknown error"
    names = ", ".join(f.name for f in split.files[:5])
    raise ViewerError(f"DuckDB cannot read the '{split.name}' split ({names}): {first}",
                      "check the files are valid (JSON Lines: one JSON object per line; CSV with a header), "
                      "or convert them to parquet.", UNEXPECTED)


def _light_columns(cur, source: str) -> list[str]:
    rel = cur.sql(f"SELECT * FROM {source} LIMIT 0")
    light, strings = [], []
    for name, duck_type in zip(rel.columns[1:], rel.types[1:], strict=False):
        if duck_type.id in LIGHT_TYPES:
            light.append(name)
        elif duck_type.id == "varchar" and str(duck_type) != "JSON":
            strings.append(name)
    if strings:
        lengths = cur.execute(f"SELECT {', '.join(f'avg(strlen({quote(s)}))' for s in strings)} FROM {source}"
                              ).fetchall()[0]
        light += [s for s, avg in zip(strings, lengths, strict=False) if (avg or 0) <= LIGHT_STRING_CHARS]
    return [c for c in rel.columns[1:] if c in light]


def build_export(cur, split: SplitFiles, folder: Path) -> ExportInfo:
    """Write the split's export into ``folder`` (atomically: built aside, then renamed) and describe it."""
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    _write_parts(cur, split, tmp)
    files = sorted(tmp.glob("*.parquet"))
    listing = _file_list(files)
    ranges = cur.execute(
        f"SELECT file_name, min(TRY_CAST(stats_min_value AS BIGINT)), sum(row_group_num_rows) "
        f"FROM parquet_metadata({listing}) WHERE column_id = 0 GROUP BY file_name").fetchall()
    by_file = {Path(name).name: (first or 0, int(rows or 0)) for name, first, rows in ranges}
    groups: dict[str, list[int]] = {}
    for name, _, rows in cur.execute(f"SELECT file_name, row_group_id, row_group_num_rows FROM parquet_metadata("
                                     f"{listing}) WHERE column_id = 0 ORDER BY file_name, row_group_id").fetchall():
        groups.setdefault(Path(name).name, []).append(int(rows))
    parts = sorted((Part(file=f.name, first=by_file.get(f.name, (0, 0))[0], rows=by_file.get(f.name, (0, 0))[1],
                         groups=groups.get(f.name, [])) for f in files), key=lambda p: p.first)
    source = f"read_parquet({listing})"
    light = _light_columns(cur, source)
    cur.execute(f"COPY (SELECT {', '.join([ROW_IDX] + [quote(c) for c in light])} FROM {source}) TO "
                f"{sql_str(str(tmp / SCAN_FILE))} (FORMAT parquet, ROW_GROUP_SIZE {SCAN_ROW_GROUP_SIZE})")
    memory = cur.execute(f"SELECT sum(total_uncompressed_size) FROM parquet_metadata({listing})").fetchall()[0][0]
    columns = cur.sql(f"SELECT * FROM {source} LIMIT 0").columns
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return ExportInfo(split=split.name, num_rows=sum(p.rows for p in parts), num_columns=len(columns) - 1,
                      num_bytes_original_files=sum(f.stat().st_size for f in split.files),
                      num_bytes_parquet_files=sum((folder / p.file).stat().st_size for p in parts),
                      num_bytes_memory=int(memory or 0), parts=parts, scan_columns=light)


@dataclass
class SplitState:
    """A split's export, ready to query."""

    name: str
    folder: Path
    stem: str
    info: ExportInfo
    columns: list[str]
    types: list[Any]

    @property
    def export(self) -> Path:
        """The folder of the split's Parquet parts and scan file."""
        return self.folder / self.stem

    @property
    def source(self) -> str:
        return self.info.source(self.export)

    def filter_source(self, names: set[str]) -> str:
        """The scan file when every column a filter touches is in it, else the full parts."""
        return self.info.scan_source(self.export) if names <= set(self.info.scan_columns) else self.source

    @property
    def features(self) -> list[FeatureItem]:
        return [FeatureItem(feature_idx=i, name=n, type=feature(t)) for i, (n, t) in
                enumerate(zip(self.columns, self.types, strict=False))]

    def described(self) -> str:
        return ", ".join(f"{quote(n)} ({feature(t).get('dtype', feature(t).get('_type', 'struct'))})"
                         for n, t in zip(self.columns, self.types, strict=False))
