"""MCP tools over the Datasets Viewer: the Hub's service (source='hf') or the local DuckDB twin
(source='local'), with the same arguments and the same JSON. Answers stay near 8 KB: long cells are
cut and listed in truncated_cells, and a note says how to see the rest.

What these tools show of a dataset is redacted before it is cut to fit (``open_backend`` hands out a
``RedactedViewer``), and the twin refuses credential files (``mcp_server.guard_paths``) before it reads or
caches anything: both rules live in the rooms, so the CLI (`tunepack viewer`) follows them too."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Annotated, Any, Callable, Literal

from pydantic import Field

from .. import settings
from ..errors import DataError
from ..viewer import ViewerBackend, open_backend
from ..viewer.fit import fit_page, fit_statistics, fit_traces
from ..viewer.responses import RowsResponse, SizeResponse, SplitsResponse, StatisticsResponse
from ..viewer.traces import TraceView, trace_view
from .common import guarded

Source = Annotated[Literal["local", "hf"], Field(
    description="'local': the DuckDB twin over files on this machine (dataset = a path); 'hf': the Hub's "
                "Datasets Viewer (dataset = a Hub id such as 'owner/name'; private data needs HF_TOKEN).")]
Dataset = Annotated[str, Field(description="A local path (file, folder, save_to_disk or datasets-cache folder) "
                                           "with source='local', or a Hub dataset id with source='hf'; for "
                                           "viewer_traces also a Hub repo of raw agent sessions as "
                                           "hf://datasets/NS/NAME[@REV] (converted to chat rows locally).")]
Config = Annotated[str, Field(description="Config name ('default' for local data; viewer_splits lists them).")]
Split = Annotated[str, Field(description="Split name, e.g. train or test (viewer_splits lists them).")]
Offset = Annotated[int, Field(description="Index of the first row of the page.", ge=0)]
Length = Annotated[int, Field(description="Rows per page (at most 100; fewer rows keep more of each cell).",
                              ge=0, le=100)]

_backends: dict[tuple[str, ...], ViewerBackend] = {}
_lock = threading.Lock()


class ViewerPage(RowsResponse):
    """A /rows, /search or /filter page, plus what was cut to stay near 8 KB."""

    note: str = Field("", description="what was cut to fit, and how to see the rest")


class ViewerStatistics(StatisticsResponse):
    note: str = Field("", description="what was cut to fit")


def _backend(source: str) -> ViewerBackend:
    """Backends are kept between calls (the twin holds DuckDB and opened indexes, the HF one its HTTP
    connections); the HF one is replaced when TUNEPACK_VIEWER_URL or the token changes."""
    key: tuple[str, ...] = (source,)
    if source == "hf":
        from huggingface_hub import get_token

        from ..viewer.hf import viewer_url

        key = (source, viewer_url(), get_token() or "")
    with _lock:
        if key not in _backends:
            for old in [k for k in _backends if k[0] == source]:
                close = getattr(_backends.pop(old), "close", None)
                if close:
                    close()
            _backends[key] = open_backend(source)
        return _backends[key]


_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tunepack-viewer")
_inflight: dict[str, Future] = {}
_inflight_lock = threading.Lock()


def _bounded(dataset: str, fn: Callable[[], Any]) -> Any:
    """Run a viewer call within the tool time budget (``TUNEPACK_TOOL_BUDGET_S``, default 15 s).

    The first local call on a large dataset writes its Parquet copy and search index, which can take
    longer: the work then goes on in the background and the agent is told to call again. Calls on a
    dataset whose preparation is still running wait for it instead of starting a second one."""
    budget = settings.tool_budget_s()
    retry = DataError(f"tunepack is still preparing '{dataset}' (first use of a large dataset: a local Parquet copy "
                      "and a search index are built once, in the background).",
                      "call the same tool again in a minute; later calls take milliseconds.")
    with _inflight_lock:
        prior = _inflight.get(dataset)
    if prior is not None and not prior.done():
        try:
            prior.result(timeout=budget)
        except FutureTimeout:
            raise retry from None
        except Exception:
            pass  # the call that started it reported its own error
    future = _pool.submit(fn)
    with _inflight_lock:
        _inflight[dataset] = future
    try:
        return future.result(timeout=budget)
    except FutureTimeout:
        raise retry from None


def _page(page: RowsResponse, offset: int) -> ViewerPage:
    fitted, note = fit_page(page, offset)
    return ViewerPage(**fitted.model_dump(), note=note)


@guarded
def viewer_splits(source: Source, dataset: Dataset) -> SplitsResponse:
    """The configs and splits of a dataset (Datasets Viewer /splits). Local data has config 'default' and
    splits from its file names (train*.jsonl, test*.parquet; a single file is 'train')."""
    return _bounded(dataset, lambda: _backend(source).splits(dataset))


@guarded
def viewer_rows(source: Source, dataset: Dataset, config: Config = "default", split: Split = "train",
                offset: Offset = 0, length: Length = 10) -> ViewerPage:
    """A page of rows with the column types (Datasets Viewer /rows). The first local call on a big dataset
    writes its Parquet export once (later calls take milliseconds)."""
    return _page(_bounded(dataset, lambda: _backend(source).rows(dataset, config, split, offset, length)), offset)


@guarded
def viewer_search(source: Source, dataset: Dataset,
                  query: Annotated[str, Field(description="Words to look for (any of them may match).")],
                  config: Config = "default", split: Split = "train", offset: Offset = 0,
                  length: Length = 10) -> ViewerPage:
    """Full-text search (Datasets Viewer /search): word matching through a BM25 full-text index, not substring
    matching — words are lower-cased and stemmed, English stop words ignored, a row matches if it holds any
    word. Locally the index (tantivy) covers string columns and text nested in list/struct columns such as
    message contents; it is built once per dataset version. Matches come back in dataset order with their
    original row_idx; num_rows_total counts them all."""
    return _page(_bounded(dataset, lambda: _backend(source).search(dataset, config, split, query, offset, length)),
                 offset)


@guarded
def viewer_filter(source: Source, dataset: Dataset,
                  where: Annotated[str, Field(description="Condition on double-quoted columns, e.g. \"score\" > 3 "
                                                          "AND (\"label\" = 'tech' OR \"lang\" IS NULL); only "
                                                          "comparisons, AND/OR/NOT, IS [NOT] NULL, parentheses, "
                                                          "strings and numbers. Empty = all rows.")] = "",
                  orderby: Annotated[str, Field(description="Sort, e.g. \"score\" DESC, \"id\" (empty = dataset "
                                                            "order).")] = "",
                  config: Config = "default", split: Split = "train", offset: Offset = 0,
                  length: Length = 10) -> ViewerPage:
    """Rows matching a SQL-like condition, optionally sorted (Datasets Viewer /filter), with their original
    row_idx and the total number of matches. Anything outside the documented grammar (functions, subqueries,
    ';', comments, unquoted names) is rejected with the allowed forms."""
    return _page(_bounded(dataset, lambda: _backend(source).filter(
        dataset, config, split, where or None, orderby or None, offset, length)), offset)


@guarded
def viewer_statistics(source: Source, dataset: Dataset, config: Config = "default", split: Split = "train",
                      columns: Annotated[list[str] | None, Field(description="Only these columns (default all).")]
                      = None) -> ViewerStatistics:
    """Per-column statistics (Datasets Viewer /statistics): numbers → nan count, min/max/mean/median/std and a
    10-bin histogram; strings → class frequencies when few distinct values, else length statistics; bools →
    frequencies; lists → length statistics."""
    stats = _bounded(dataset, lambda: _backend(source).statistics(dataset, config, split))
    if columns:
        stats = stats.model_copy(update={"statistics": [s for s in stats.statistics if s.column_name in columns]})
    fitted, note = fit_statistics(stats)
    return ViewerStatistics(**fitted.model_dump(), note=note)


@guarded
def viewer_size(source: Source, dataset: Dataset) -> SizeResponse:
    """Rows and bytes of the dataset, per config and split (Datasets Viewer /size)."""
    return _bounded(dataset, lambda: _backend(source).size(dataset))


@guarded
def viewer_traces(source: Source, dataset: Dataset, config: Config = "default", split: Split = "train",
                  column: Annotated[str, Field(description="Column holding the conversations.")] = "messages",
                  max_rows: Annotated[int | None, Field(description="Rows to scan (default 20000 local, 1000 hf).",
                                                        ge=1, le=1_000_000)] = None) -> TraceView:
    """The shape of agent traces (a messages column, or a folder of raw sessions): role sequences (repeats
    folded), per tool the calls, argument keys and calls without a result; rows without an assistant turn."""
    limit = max_rows or (20000 if source == "local" else 1000)
    return fit_traces(_bounded(dataset, lambda: trace_view(_backend(source), dataset, config, split, column, limit)))


TOOLS = [viewer_splits, viewer_rows, viewer_search, viewer_filter, viewer_statistics, viewer_size, viewer_traces]
