"""/statistics for the twin, computed in DuckDB with the service's rules (dataset-viewer's
``statistics_utils``): 10 histogram bins, 5 decimals, sample std, interpolated median.

- int / float → nan_count, nan_proportion, min, max, mean, median, std, histogram{hist, bin_edges};
- bool → nan counts and frequencies {"False": n, "True": n};
- string → class frequencies ("string_label") when it has ≤ 10 unique values, or ≤ 20 % unique and
  ≤ 1000 of them; otherwise string-length statistics ("string_text");
- list → statistics of the list lengths; other types (structs, JSON, dates) are skipped, like the service.
"""

from __future__ import annotations

import math

from .export import ROW_IDX
from .features import FLOAT_IDS, INT_IDS, is_json, quote
from .responses import (
    BoolStatistics,
    CategoricalStatistics,
    ColumnStatisticsItem,
    Histogram,
    NumericalStatistics,
    StatisticsResponse,
)

DECIMALS = 5
NUM_BINS = 10
MAX_PROPORTION_STRING_LABELS = 0.2
MAX_NUM_STRING_LABELS = 1000


def _round(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(float(value), DECIMALS)


def bin_edges(lo: float, hi: float, is_int: bool) -> list[float | int]:
    """The service's ``generate_bins``: integer bins of a whole size, or 10 equal float bins."""
    if lo == hi:
        return [lo, hi]
    if is_int:
        size = math.ceil((hi - lo + 1) / NUM_BINS)
        edges: list = list(range(int(lo), int(hi), size))
    else:
        width = (hi - lo) / NUM_BINS
        edges = [lo + i * width for i in range(NUM_BINS) if lo + i * width < hi]
    if edges[-1] != hi:
        edges.append(hi)
    return edges


def _numeric(cur, source: str, expr: str, n: int, is_int: bool) -> NumericalStatistics:
    values = (f"(SELECT CASE WHEN isnan(x) THEN NULL ELSE x END AS v FROM "
              f"(SELECT CAST({expr} AS DOUBLE) AS x FROM {source}))")
    lo, hi, mean, median, std, valid = cur.execute(
        f"SELECT min(v), max(v), avg(v), median(v), stddev_samp(v), count(v) FROM {values}").fetchall()[0]
    nan_count = n - int(valid)
    proportion = _round(nan_count / n) if nan_count else 0.0
    if lo is None:
        return NumericalStatistics(nan_count=nan_count, nan_proportion=1.0 if n else 0.0, min=None, max=None,
                                   mean=None, median=None, std=None, histogram=None)
    if is_int:
        lo, hi = int(lo), int(hi)
    else:  # min and max of the non-NaN values: what _round does, without its None case
        lo, hi = round(float(lo), DECIMALS), round(float(hi), DECIMALS)
    edges = bin_edges(lo, hi, is_int)
    if len(edges) == 2 and edges[0] == edges[1]:
        hist = [n - nan_count]
    else:
        cases, last = [], len(edges) - 2
        for i in range(last + 1):  # [e_i, e_i+1) bins, the last one closed; the ends open for rounded edges
            low = "TRUE" if i == 0 else f"v >= {edges[i]!r}"
            high = "TRUE" if i == last else f"v < {edges[i + 1]!r}"
            cases.append(f"count(v) FILTER (WHERE {low} AND {high})")
        hist = [int(c) for c in cur.execute(f"SELECT {', '.join(cases)} FROM {values}").fetchall()[0]]
    shown = edges if is_int else [round(e, DECIMALS) for e in edges]
    return NumericalStatistics(nan_count=nan_count, nan_proportion=proportion, min=lo, max=hi, mean=_round(mean),
                               median=_round(median), std=_round(std), histogram=Histogram(hist=hist, bin_edges=shown))


def _frequencies(cur, source: str, col: str) -> dict[str, int]:
    rows = cur.execute(f"SELECT CAST({col} AS VARCHAR) AS k, count(*) AS c FROM {source} WHERE {col} IS NOT NULL "
                       f"GROUP BY k ORDER BY c DESC, k").fetchall()
    return {str(k): int(c) for k, c in rows}


def _string(cur, source: str, col: str, n: int) -> tuple[str, NumericalStatistics | CategoricalStatistics]:
    n_unique, nulls = cur.execute(f"SELECT count(DISTINCT {col}), count(*) - count({col}) FROM {source}"
                                  ).fetchall()[0]
    n_unique += 1 if nulls else 0  # polars' n_unique counts null as a value
    if n and ((n_unique / n <= MAX_PROPORTION_STRING_LABELS and n_unique <= MAX_NUM_STRING_LABELS)
              or n_unique <= NUM_BINS):
        freqs = _frequencies(cur, source, col)
        return "string_label", CategoricalStatistics(
            nan_count=int(nulls), nan_proportion=_round(nulls / n) if nulls else 0.0, no_label_count=0,
            no_label_proportion=0.0, n_unique=len(freqs), frequencies=freqs)
    return "string_text", _numeric(cur, source, f"length({col})", n, True)


def column_statistics(cur, source: str, name: str, duck_type, n: int) -> ColumnStatisticsItem | None:
    col = quote(name)
    kind = duck_type.id
    if kind in INT_IDS:
        return ColumnStatisticsItem(column_name=name, column_type="int",
                                    column_statistics=_numeric(cur, source, col, n, True))
    if kind in FLOAT_IDS:
        return ColumnStatisticsItem(column_name=name, column_type="float",
                                    column_statistics=_numeric(cur, source, col, n, False))
    if kind == "boolean":
        counts = dict(cur.execute(f"SELECT {col}, count(*) FROM {source} GROUP BY ALL").fetchall())
        nulls = counts.pop(None, 0)
        return ColumnStatisticsItem(column_name=name, column_type="bool", column_statistics=BoolStatistics(
            nan_count=int(nulls), nan_proportion=_round(nulls / n) if nulls else 0.0,
            frequencies={str(k): int(v) for k, v in sorted(counts.items())}))
    if (kind == "varchar" and not is_json(duck_type)) or kind == "enum":
        column_type, stats = _string(cur, source, col, n)
        return ColumnStatisticsItem(column_name=name, column_type=column_type, column_statistics=stats)
    if kind in ("list", "array"):
        return ColumnStatisticsItem(column_name=name, column_type="list",
                                    column_statistics=_numeric(cur, source, f"len({col})", n, True))
    return None


def statistics(cur, source: str) -> StatisticsResponse:
    """Statistics of every supported column of ``source`` (a DuckDB table expression)."""
    rel = cur.sql(f"SELECT * FROM {source} LIMIT 0")
    n = cur.execute(f"SELECT count(*) FROM {source}").fetchall()[0][0]
    items = []
    for name, duck_type in zip(rel.columns, rel.types, strict=False):
        if name == ROW_IDX:
            continue
        item = column_statistics(cur, source, name, duck_type, n)
        if item is not None:
            items.append(item)
    return StatisticsResponse(num_examples=n, statistics=sorted(items, key=lambda i: i.column_name), partial=False)

