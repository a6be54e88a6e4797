"""A backend whose answers are redacted: what ``open_backend`` hands to the tools and the CLI.

Every endpoint's response, and the text of every error it raises, goes through ``mcp_server.shown`` — rows,
search hits and filter pages, statistics (frequency tables keyed by cell values), DuckDB's messages (which can
quote a cell). ``iter_rows`` stays raw: it feeds counts (the trace view), whose own result is redacted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..shown import shown, shown_errors
from .backend import ViewerBackend
from .responses import (
    MAX_ROWS_PER_PAGE,
    FirstRowsResponse,
    IsValidResponse,
    RowsResponse,
    SizeResponse,
    SplitsResponse,
    StatisticsResponse,
)

T = TypeVar("T")


class RedactedViewer(ViewerBackend):
    def __init__(self, inner: ViewerBackend):
        self.inner = inner
        self.source = inner.source  # type: ignore[misc]  # the inner backend's, per instance

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close:
            close()

    @staticmethod
    def _call(fn: Callable[[], T]) -> T:
        with shown_errors():
            return shown(fn())

    def is_valid(self, dataset: str) -> IsValidResponse:
        return self._call(lambda: self.inner.is_valid(dataset))

    def splits(self, dataset: str, config: str | None = None) -> SplitsResponse:
        return self._call(lambda: self.inner.splits(dataset, config))

    def first_rows(self, dataset: str, config: str, split: str) -> FirstRowsResponse:
        return self._call(lambda: self.inner.first_rows(dataset, config, split))

    def rows(self, dataset: str, config: str, split: str, offset: int = 0,
             length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        return self._call(lambda: self.inner.rows(dataset, config, split, offset, length))

    def search(self, dataset: str, config: str, split: str, query: str, offset: int = 0,
               length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        return self._call(lambda: self.inner.search(dataset, config, split, query, offset, length))

    def filter(self, dataset: str, config: str, split: str, where: str | None = None, orderby: str | None = None,
               offset: int = 0, length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        return self._call(lambda: self.inner.filter(dataset, config, split, where, orderby, offset, length))

    def statistics(self, dataset: str, config: str, split: str) -> StatisticsResponse:
        return self._call(lambda: self.inner.statistics(dataset, config, split))

    def size(self, dataset: str) -> SizeResponse:
        return self._call(lambda: self.inner.size(dataset))

    def iter_rows(self, dataset: str, config: str, split: str, limit: int,
                  columns: list[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        with shown_errors():
            yield from self.inner.iter_rows(dataset, config, split, limit, columns)
