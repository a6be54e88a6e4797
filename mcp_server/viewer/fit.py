"""Keep Viewer answers near 8 KB for an agent's context: cut long cells, then drop rows, and say so.

A cut cell becomes its JSON text cut to a limit and ending in "…", and its column is listed in the
row's ``truncated_cells`` (the service marks cut cells the same way in /first-rows). The note tells
the agent what was cut and how to see the rest.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from .responses import RowItem, RowsResponse, StatisticsResponse
from .traces import TraceView

BUDGET = 7500
CELL_LIMITS = (4000, 2000, 1000, 500, 250, 120, 60)


def size(model: BaseModel) -> int:
    return len(model.model_dump_json())


def cut_cell(value: Any, limit: int) -> tuple[Any, bool]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return value, False
    return text[:limit] + "…", True


def _cut_rows(rows: list[RowItem], limit: int) -> list[RowItem]:
    out = []
    for item in rows:
        row, cut = {}, set(item.truncated_cells)
        for name, value in item.row.items():
            row[name], was_cut = cut_cell(value, limit)
            if was_cut:
                cut.add(name)
        out.append(RowItem(row_idx=item.row_idx, row=row, truncated_cells=sorted(cut)))
    return out


def fit_page(page: RowsResponse, offset: int, budget: int = BUDGET) -> tuple[RowsResponse, str]:
    """The page, cells cut and rows dropped until its JSON fits ``budget``; and a note saying what changed."""
    if size(page) <= budget:
        return page, ""
    fitted, note = page, ""
    for limit in CELL_LIMITS:
        fitted = page.model_copy(update={"rows": _cut_rows(page.rows, limit)})
        note = (f"cells longer than {limit} characters were cut (their columns are in truncated_cells); "
                "ask for fewer rows (length) to see more of each cell")
        if size(fitted) <= budget:
            return fitted, note
    rows = list(fitted.rows)
    while rows and size(fitted.model_copy(update={"rows": rows})) > budget:
        rows.pop()
    shown = len(rows)
    if shown < len(page.rows):
        nxt = page.rows[shown].row_idx
        note += (f"; only {shown} of the {len(page.rows)} rows fit near 8 KB: call again with offset="
                 f"{offset + shown} (next row_idx {nxt})")
    return fitted.model_copy(update={"rows": rows}), note


def fit_statistics(stats: StatisticsResponse, budget: int = BUDGET) -> tuple[StatisticsResponse, str]:
    """Statistics with long frequency tables cut to their most common values, then columns dropped."""
    if size(stats) <= budget:
        return stats, ""
    notes = []
    for top in (20, 10, 5):
        items = []
        for item in stats.statistics:
            freqs = getattr(item.column_statistics, "frequencies", None)
            if freqs and len(freqs) > top:
                kept = dict(sorted(freqs.items(), key=lambda kv: -kv[1])[:top])
                item = item.model_copy(update={"column_statistics": item.column_statistics.model_copy(
                    update={"frequencies": kept})})
            items.append(item)
        trimmed = stats.model_copy(update={"statistics": items})
        if size(trimmed) <= budget:
            return trimmed, f"frequency tables show their {top} most common values (n_unique has the full count)"
    notes.append("frequency tables show their 5 most common values")
    items = list(trimmed.statistics)
    dropped = []
    while items and size(trimmed.model_copy(update={"statistics": items})) > budget:
        dropped.append(items.pop().column_name)
    notes.append(f"columns left out to stay near 8 KB: {', '.join(reversed(dropped))} — ask for them with "
                 "columns=[...]")
    return trimmed.model_copy(update={"statistics": items}), "; ".join(notes)


def fit_traces(view: TraceView, budget: int = BUDGET) -> TraceView:
    """A trace view with its longest lists shortened (notes say so)."""
    for top in (15, 8, 4, 2):
        sequences = dict(list(view.role_sequences.items())[:top])
        sequences = {(k if len(k) <= 300 else k[:300] + "…"): v for k, v in sequences.items()}
        tools = {name: stats.model_copy(update={"argument_keys": dict(sorted(
            stats.argument_keys.items(), key=lambda kv: -kv[1])[:top])}) for name, stats in
            list(view.tool_calls.items())[:top * 2]}
        fitted = view.model_copy(update={"role_sequences": sequences, "tool_calls": tools})
        if size(fitted) <= budget:
            break
    if fitted.tool_calls != view.tool_calls or fitted.role_sequences != view.role_sequences:
        fitted.notes = [*view.notes, f"lists cut to stay near 8 KB: top {len(fitted.role_sequences)} role "
                                     f"sequences, top {len(fitted.tool_calls)} tools"]
    return fitted
