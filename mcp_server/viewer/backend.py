"""One interface for the Datasets Viewer endpoints, served by the Hub's service (``hf.HfViewer``) or by
the local DuckDB twin (``twin.TwinViewer``), plus the error both raise.

Callers (the MCP tools, the trace view, the benchmark) only see ``ViewerBackend``: swapping the Hub for
local files changes nothing but the ``dataset`` argument (a Hub id or a path).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

from ..errors import DataError
from .responses import (
    MAX_ROWS_PER_PAGE,
    FirstRowsResponse,
    IsValidResponse,
    RowsResponse,
    SizeResponse,
    SplitsResponse,
    StatisticsResponse,
)

# X-Error-Code values of the service (libapi.exceptions) that tunepack maps.
INVALID_PARAMETER = "InvalidParameter"
MISSING_PARAMETER = "MissingRequiredParameter"
NOT_FOUND = "ResponseNotFound"
NOT_READY = "ResponseNotReady"
SEARCH_UNAVAILABLE = "SearchFeatureNotAvailableError"
UNAUTHORIZED = "Unauthorized"
UNREACHABLE = "Unreachable"
UNEXPECTED = "UnexpectedApiError"

STATUS = {INVALID_PARAMETER: 422, MISSING_PARAMETER: 422, NOT_FOUND: 404, NOT_READY: 500,
          SEARCH_UNAVAILABLE: 400, UNAUTHORIZED: 401, UNREACHABLE: 503, UNEXPECTED: 500}

WHERE_HELP = ("where accepts only: double-quoted column names (\"age\"), 'single-quoted strings' (double a quote "
              "inside: 'it''s'), numbers, TRUE/FALSE, the comparisons = != <> < <= > >=, IS NULL / IS NOT NULL, "
              "AND / OR / NOT and parentheses — no functions, subqueries, ';' or comments. Example: "
              "\"age\" > 30 AND (\"label\" = 'tech' OR \"score\" IS NULL). orderby: \"col\" [ASC|DESC], ... "
              "e.g. \"age\" DESC, \"name\"")


class ViewerError(DataError):
    """A Viewer request failed. ``code`` is the service's X-Error-Code (or Unauthorized/Unreachable),
    ``status`` its HTTP status; ``problem`` and ``fix`` are for the agent."""

    def __init__(self, problem: str, fix: str, code: str = UNEXPECTED, status: int | None = None):
        super().__init__(problem, fix)
        self.code = code
        self.status = status if status is not None else STATUS.get(code, 500)

    def to_dict(self) -> dict[str, str]:
        return {**super().to_dict(), "code": self.code, "status": str(self.status)}


def check_page(offset: int, length: int) -> None:
    """The service's bounds on offset and length, with its error code."""
    if offset < 0:
        raise ViewerError(f"offset must be ≥ 0 (got {offset}).", "pass offset=0 or a positive row offset.",
                          INVALID_PARAMETER)
    if length < 0 or length > MAX_ROWS_PER_PAGE:
        raise ViewerError(f"length must be between 0 and {MAX_ROWS_PER_PAGE} (got {length}).",
                          f"ask for at most {MAX_ROWS_PER_PAGE} rows per call and page with offset.",
                          INVALID_PARAMETER)


class ViewerBackend(ABC):
    """The Datasets Viewer endpoints. ``dataset`` is a Hub id (hf) or a local path (twin)."""

    source: ClassVar[str]

    @abstractmethod
    def is_valid(self, dataset: str) -> IsValidResponse:
        """/is-valid: which features (viewer, preview, search, filter, statistics) work for the dataset."""

    @abstractmethod
    def splits(self, dataset: str, config: str | None = None) -> SplitsResponse:
        """/splits: the (config, split) pairs."""

    @abstractmethod
    def first_rows(self, dataset: str, config: str, split: str) -> FirstRowsResponse:
        """/first-rows: up to 100 first rows and the features."""

    @abstractmethod
    def rows(self, dataset: str, config: str, split: str, offset: int = 0,
             length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        """/rows: a page of rows (length ≤ 100) at an offset."""

    @abstractmethod
    def search(self, dataset: str, config: str, split: str, query: str, offset: int = 0,
               length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        """/search: rows matching a full-text query, with their original row_idx."""

    @abstractmethod
    def filter(self, dataset: str, config: str, split: str, where: str | None = None, orderby: str | None = None,
               offset: int = 0, length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        """/filter: rows matching a SQL-like where, ordered by orderby, with their original row_idx."""

    @abstractmethod
    def statistics(self, dataset: str, config: str, split: str) -> StatisticsResponse:
        """/statistics: per-column descriptive statistics."""

    @abstractmethod
    def size(self, dataset: str) -> SizeResponse:
        """/size: rows and bytes of the dataset, its configs and splits."""

    def iter_rows(self, dataset: str, config: str, split: str, limit: int,
                  columns: list[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        """(row_idx, row) for the first ``limit`` rows, paging through /rows (backends may read faster)."""
        offset = 0
        while offset < limit:
            page = self.rows(dataset, config, split, offset, min(MAX_ROWS_PER_PAGE, limit - offset))
            for item in page.rows:
                yield item.row_idx, ({k: item.row.get(k) for k in columns} if columns else item.row)
            offset += len(page.rows)
            if not page.rows or offset >= page.num_rows_total:
                return
