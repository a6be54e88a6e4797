"""The local twin of the Datasets Viewer: the same endpoints and JSON over files on this machine.

``dataset`` is a path (file, folder, ``save_to_disk`` folder or ``datasets`` cache folder); the config
is "default"; splits come from the file layout (``sources``). On first use of a dataset revision the
twin writes a Parquet export per split (``export``), and on first search a tantivy index
(``search_index``); both live under ``<tunepack home>/viewer-index/<dataset>/<revision>/`` and are
reused until a data file changes (older revisions are deleted then). Every query runs in DuckDB
over the export; /filter's where/orderby pass the strict grammar of ``where`` first.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..home import home_dir
from .backend import (
    INVALID_PARAMETER,
    MISSING_PARAMETER,
    NOT_FOUND,
    SEARCH_UNAVAILABLE,
    WHERE_HELP,
    ViewerBackend,
    ViewerError,
    check_page,
)
from .export import ROW_IDX, SCAN_FILE, ExportInfo, SplitState, build_export
from .features import converter, feature, quote, text_sql
from .responses import (
    MAX_ROWS_PER_PAGE,
    FirstRowsResponse,
    IsValidResponse,
    RowItem,
    RowsResponse,
    SizeBody,
    SizeConfig,
    SizeDataset,
    SizeResponse,
    SplitItem,
    SplitsResponse,
    StatisticsResponse,
)
from .search_index import SearchIndex, build_index
from .sources import Layout, find_layout
from .stats import statistics
from .where import parse_orderby, parse_where

CONFIG = "default"
CLUSTER_GAP = 256  # ids closer than this are read with one range
COUNT_CACHE = 256  # filter counts remembered
GROUP_CACHE = 128  # decoded export row groups (~64 KB compressed each) kept for the next page
SCAN_IN_MEMORY = 64 * 2**20  # a scan file up to this size is queried as an in-memory table
ENUM_MAX_VALUES = 4096  # string columns with at most this many values are ENUMs in that table


def _clusters(ids: list[int]) -> list[tuple[int, int]]:
    """Ranges of nearby ids (likely sharing a row group): each range is one cheap pruned read."""
    out: list[list[int]] = []
    for i in sorted(set(ids)):
        if out and i - out[-1][1] < CLUSTER_GAP:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [(a, b) for a, b in out]


class TwinViewer(ViewerBackend):
    source = "local"

    def __init__(self, index_root: Path | str | None = None):
        import duckdb

        self.index_root = Path(index_root) if index_root else home_dir("viewer-index")
        self._con = duckdb.connect()
        self._con.execute("SET GLOBAL parquet_metadata_cache = true")
        self._lock = threading.RLock()
        self._splits: dict[tuple[Path, str], SplitState] = {}
        self._indexes: dict[Path, SearchIndex] = {}
        self._counts: OrderedDict[tuple[str, str], int] = OrderedDict()  # (source, where) → matches
        self._count_lock = threading.Lock()
        self._parquet_files: dict[str, Any] = {}  # export part → open pyarrow ParquetFile
        self._groups: OrderedDict[tuple[str, int], Any] = OrderedDict()  # (part, row group) → decoded table
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tunepack-twin")
        self._memory_tables: set[str] = set()  # scan files loaded as in-memory tables

    def _cursor(self):
        """A cursor of the shared database for one call (DuckDB connections are not shared across threads)."""
        cur = self._con.cursor()
        cur.execute("SET enable_progress_bar = false")  # a progress bar would write to stdout, the MCP channel
        return cur

    # --- preparation --------------------------------------------------------------------------

    def revision_dir(self, dataset: str) -> tuple[Layout, Path]:
        """The dataset's layout and the folder of its current revision (older revisions removed)."""
        layout = find_layout(dataset)
        root = str(layout.root.resolve())
        slug = re.sub(r"[^\w.-]+", "_", layout.root.name)[:40] or "dataset"
        base = self.index_root / f"{slug}-{hashlib.sha256(root.encode()).hexdigest()[:10]}"
        folder = base / layout.revision
        if not folder.is_dir():
            with self._lock, FileLock(str(base) + ".lock"):
                folder.mkdir(parents=True, exist_ok=True)
                for old in base.iterdir():
                    if old.is_dir() and old != folder:
                        shutil.rmtree(old, ignore_errors=True)
                (base / "source.json").write_text(json.dumps({"path": root, "kind": layout.kind}))
        return layout, folder

    def split_state(self, dataset: str, config: str, split: str) -> SplitState:
        if config != CONFIG:
            raise ViewerError(f"Local datasets have one config, 'default' (got '{config}').",
                              "pass config='default'.", NOT_FOUND)
        layout, folder = self.revision_dir(dataset)
        files = layout.split(split)
        key = (folder, split)
        if key in self._splits:
            return self._splits[key]
        stem = re.sub(r"[^\w.-]+", "_", split) + "-" + hashlib.sha256(split.encode()).hexdigest()[:6]
        info_path = folder / f"{stem}.json"
        with self._lock, FileLock(str(folder / f"{stem}.lock")):
            cur = self._cursor()
            try:
                if not info_path.is_file():
                    info = build_export(cur, files, folder / stem)
                    info_path.write_text(info.model_dump_json())
                info = ExportInfo.model_validate_json(info_path.read_text())
                rel = cur.sql(f"SELECT * FROM {info.source(folder / stem)} LIMIT 0")
                columns, types = rel.columns[1:], rel.types[1:]
            finally:
                cur.close()
        state = SplitState(split, folder, stem, info, list(columns), list(types))
        self._splits[key] = state
        return state

    def search_index(self, dataset: str, config: str, split: str) -> tuple[SearchIndex, float]:
        """The split's full-text index, built on first use (returns it and the build seconds, 0 if reused)."""
        state = self.split_state(dataset, config, split)
        path = state.folder / f"{state.stem}.search"
        seconds = 0.0
        with self._lock, FileLock(str(path) + ".lock"):
            if not path.is_dir():
                parts = [p for n, t in zip(state.columns, state.types, strict=False) if (p := text_sql(quote(n), t))]
                if not parts:
                    raise ViewerError(f"'{dataset}' has no text to search (no string columns).",
                                      "use viewer_filter with a where clause instead.", SEARCH_UNAVAILABLE)
                cur = self._cursor()
                try:
                    seconds = build_index(cur, state.source, f"concat_ws(' ', {', '.join(parts)})", path)
                finally:
                    cur.close()
                self._indexes.pop(path, None)
            if path not in self._indexes:
                self._indexes[path] = SearchIndex(path)
        return self._indexes[path], seconds

    # --- reading ------------------------------------------------------------------------------

    def _fetch(self, state: SplitState, ids: list[int]) -> list[RowItem]:
        """Rows by row_idx, in the order of ``ids``. Only the row groups holding them are read (pyarrow reads a
        group by its index; a group is ~64 KB; recently read groups stay decoded in a small cache), the wanted
        rows are taken out and turned into Python values (by DuckDB where a column holds a MAP, whose Python
        shape differs between the two)."""
        if not ids:
            return []
        import pyarrow as pa

        by_file: dict[str, dict[int, list[int]]] = {}
        for (file, group), wanted in state.info.locate(sorted(set(ids))).items():
            by_file.setdefault(file, {})[group] = [offset for _, offset in wanted]
        pieces = []
        for file, groups in by_file.items():
            tables = self._tables(state, file, sorted(groups))
            pieces += [tables[g].take(pa.array(groups[g], type=pa.int64())) for g in sorted(groups)]
        if not pieces:
            return []
        fetched = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
        if any(pa.types.is_map(t) for t in fetched.schema.types) or "MAP(" in " ".join(map(str, state.types)):
            cur = self._cursor()
            try:
                cur.register("__fetched", fetched)
                values = cur.execute("SELECT * FROM __fetched").fetchall()
            finally:
                cur.close()
        else:
            values = [tuple(row.values()) for row in fetched.to_pylist()]
        found = {row[0]: row[1:] for row in values}
        convert = [(n, converter(feature(t))) for n, t in zip(state.columns, state.types, strict=False)]
        return [RowItem(row_idx=i, row={n: (v if c is None else c(v)) for (n, c), v in zip(convert, found[i], strict=False)},
                        truncated_cells=[]) for i in ids if i in found]

    def _tables(self, state: SplitState, file: str, groups: list[int]) -> dict[int, Any]:
        """The decoded row groups of one part file: from the cache, the missing ones read in one call."""
        key = str(state.export / file)
        with self._lock:
            found = {g: self._groups[(key, g)] for g in groups if (key, g) in self._groups}
            for g in found:
                self._groups.move_to_end((key, g))
        missing = [g for g in groups if g not in found]
        if missing:
            handle = self._parquet(state, file)
            table, start = handle.read_row_groups(missing), 0
            for group in missing:
                rows = handle.metadata.row_group(group).num_rows
                found[group] = table.slice(start, rows)
                start += rows
            with self._lock:
                self._groups.update({(key, g): found[g] for g in missing})
                while len(self._groups) > GROUP_CACHE:
                    self._groups.popitem(last=False)
        return found

    def _parquet(self, state: SplitState, file: str):
        """An open pyarrow ParquetFile of an export part (kept: opening reads the footer)."""
        import pyarrow.parquet as pq

        key = str(state.export / file)
        with self._lock:
            handle = self._parquet_files.get(key)
            if handle is None:
                handle = self._parquet_files[key] = pq.ParquetFile(key)
        return handle

    def _page(self, state: SplitState, ids: list[int], total: int) -> RowsResponse:
        return RowsResponse(features=state.features, rows=self._fetch(state, ids), num_rows_total=total,
                            num_rows_per_page=MAX_ROWS_PER_PAGE, partial=False)

    def iter_rows(self, dataset: str, config: str, split: str, limit: int,
                  columns: list[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        state = self.split_state(dataset, config, split)
        names = [c for c in (columns or state.columns) if c in state.columns]
        convert = {n: converter(feature(t)) for n, t in zip(state.columns, state.types, strict=False)}
        select = ", ".join([ROW_IDX] + [quote(n) for n in names])
        cur = self._cursor()
        try:
            result = cur.execute(f"SELECT {select} FROM {state.source} WHERE {ROW_IDX} < {int(limit)} "
                                 f"ORDER BY {ROW_IDX}")
            while batch := result.fetchmany(1000):
                for row in batch:
                    yield row[0], {n: (v if convert[n] is None else convert[n](v)) for n, v in zip(names, row[1:], strict=False)}
        finally:
            cur.close()

    # --- endpoints ----------------------------------------------------------------------------

    def is_valid(self, dataset: str) -> IsValidResponse:
        layout = find_layout(dataset)
        state = self.split_state(dataset, CONFIG, layout.splits[0].name)
        searchable = any(text_sql(quote(n), t) for n, t in zip(state.columns, state.types, strict=False))
        return IsValidResponse(viewer=True, preview=True, search=searchable, filter=True, statistics=True)

    def splits(self, dataset: str, config: str | None = None) -> SplitsResponse:
        if config not in (None, CONFIG):
            raise ViewerError(f"Local datasets have one config, 'default' (got '{config}').",
                              "pass config='default' or leave it out.", NOT_FOUND)
        return SplitsResponse(splits=[SplitItem(dataset=dataset, config=CONFIG, split=s.name)
                                      for s in find_layout(dataset).splits])

    def first_rows(self, dataset: str, config: str, split: str) -> FirstRowsResponse:
        page = self.rows(dataset, config, split, 0, MAX_ROWS_PER_PAGE)
        return FirstRowsResponse(dataset=dataset, config=config, split=split, features=page.features,
                                 rows=page.rows, truncated=False)

    def rows(self, dataset: str, config: str, split: str, offset: int = 0,
             length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        check_page(offset, length)
        state = self.split_state(dataset, config, split)
        total = state.info.num_rows
        return self._page(state, list(range(offset, min(offset + length, total))), total)

    def search(self, dataset: str, config: str, split: str, query: str, offset: int = 0,
               length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        if not query or not query.strip():
            raise ViewerError("Parameter 'query' is required and must not be empty.",
                              "pass one or more words to search for.", MISSING_PARAMETER)
        check_page(offset, length)
        index, _ = self.search_index(dataset, config, split)
        total, ids = index.search(query, offset, length)
        return self._page(self.split_state(dataset, config, split), ids, total)

    def filter(self, dataset: str, config: str, split: str, where: str | None = None, orderby: str | None = None,
               offset: int = 0, length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        check_page(offset, length)
        state = self.split_state(dataset, config, split)
        used: set[str] = set()
        cond = f" WHERE {parse_where(where, state.columns, used)}" if where and where.strip() else ""
        # without orderby, dataset order: DuckDB keeps the file order (preserve_insertion_order) and can stop early
        order = f" ORDER BY {parse_orderby(orderby, state.columns, used)}, {ROW_IDX}" if orderby and orderby.strip() \
            else ""
        source = self._filter_source(state, used)
        counting = self._pool.submit(self._count, source, cond)  # the total, beside the page (2 cores)
        cur = self._cursor()
        try:
            ids = [r[0] for r in cur.execute(f"SELECT {ROW_IDX} FROM {source}{cond}{order} "
                                             f"LIMIT {int(length)} OFFSET {int(offset)}").fetchall()]
            rows = self._fetch(state, ids)
            total = counting.result()
        except Exception as exc:  # duckdb.Error: a type mismatch such as "label" > 3
            if isinstance(exc, ViewerError):
                raise
            param = "where" if cond else "orderby"
            raise ViewerError(f"Parameter '{param}' is invalid: DuckDB says {str(exc).splitlines()[0][:200]}",
                              f"compare each column with a value of its type. Columns: {state.described()}. "
                              f"{WHERE_HELP}", INVALID_PARAMETER) from None
        finally:
            cur.close()
        return RowsResponse(features=state.features, rows=rows, num_rows_total=int(total),
                            num_rows_per_page=MAX_ROWS_PER_PAGE, partial=False)

    def _filter_source(self, state: SplitState, used: set[str]) -> str:
        """What a filter reads: the scan file's light columns, held as an in-memory DuckDB table when the file is
        small enough (a query then plans and starts in well under a millisecond), else the files themselves."""
        source = state.filter_source(used)
        path = state.export / SCAN_FILE
        if not used <= set(state.info.scan_columns) or not path.is_file() or path.stat().st_size > SCAN_IN_MEMORY:
            return source
        name = "scan_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
        with self._lock:
            if name not in self._memory_tables:
                cur = self._cursor()
                try:
                    cur.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT {self._enum_columns(cur, name, source)} "
                                f"FROM {source} ORDER BY {ROW_IDX}")
                finally:
                    cur.close()
                self._memory_tables.add(name)
        return name

    @staticmethod
    def _enum_columns(cur, name: str, source: str) -> str:
        """The select list of the in-memory scan table: short-valued string columns become sorted ENUMs (a filter
        compares small integers, several times faster; DuckDB still compares them as strings where it must)."""
        rel = cur.sql(f"SELECT * FROM {source} LIMIT 0")
        strings = [c for c, t in zip(rel.columns, rel.dtypes, strict=False) if str(t) == "VARCHAR"]
        if not strings:
            return "*"
        distinct = cur.execute(f"SELECT {', '.join(f'approx_count_distinct({quote(c)})' for c in strings)} "
                               f"FROM {source}").fetchall()[0]
        casts = []
        for i, (column, count) in enumerate(zip(strings, distinct, strict=False)):
            if count and count <= ENUM_MAX_VALUES:
                cur.execute(f"CREATE TYPE IF NOT EXISTS {name}_e{i} AS ENUM (SELECT DISTINCT {quote(column)} FROM "
                            f"{source} WHERE {quote(column)} IS NOT NULL ORDER BY 1)")
                casts.append(f"{quote(column)}::{name}_e{i} AS {quote(column)}")
        return f"* REPLACE ({', '.join(casts)})" if casts else "*"

    def _count(self, source: str, cond: str) -> int:
        """Rows matching a where; remembered per export and condition, so paging a filter scans once."""
        key = (source, cond)
        with self._count_lock:
            if key in self._counts:
                self._counts.move_to_end(key)
                return self._counts[key]
        cur = self._cursor()
        try:
            value = int(cur.execute(f"SELECT count(*) FROM {source}{cond}").fetchall()[0][0])
        finally:
            cur.close()
        with self._count_lock:
            self._counts[key] = value
            while len(self._counts) > COUNT_CACHE:
                self._counts.popitem(last=False)
        return value

    def statistics(self, dataset: str, config: str, split: str) -> StatisticsResponse:
        state = self.split_state(dataset, config, split)
        path = state.folder / f"{state.stem}.stats.json"
        with self._lock, FileLock(str(path) + ".lock"):
            if not path.is_file():
                cur = self._cursor()
                try:
                    path.write_text(statistics(cur, state.source).model_dump_json())
                finally:
                    cur.close()
        return StatisticsResponse.model_validate_json(path.read_text())

    def size(self, dataset: str) -> SizeResponse:
        states = [self.split_state(dataset, CONFIG, s.name) for s in find_layout(dataset).splits]
        keys = ("num_bytes_original_files", "num_bytes_parquet_files", "num_bytes_memory", "num_rows")
        totals = {k: sum(getattr(s.info, k) for s in states) for k in keys}
        columns = max((s.info.num_columns for s in states), default=0)
        return SizeResponse(size=SizeBody(
            dataset=SizeDataset(dataset=dataset, estimated_num_rows=None, **totals),
            configs=[SizeConfig(dataset=dataset, config=CONFIG, num_columns=columns, estimated_num_rows=None,
                                **totals)],
            splits=[{"dataset": dataset, "config": CONFIG, "split": s.name, "num_columns": s.info.num_columns,
                     "estimated_num_rows": None, **{k: getattr(s.info, k) for k in keys}} for s in states]),
            pending=[], failed=[], partial=False)
