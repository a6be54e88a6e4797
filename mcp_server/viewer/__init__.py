"""Viewer room: look at a dataset before training.

- ``inspect_dataset``: one report on a local dataset (columns, conversation structure, problems);
- ``ViewerBackend``: the Datasets Viewer endpoints (is-valid, splits, first-rows, rows, search, filter,
  statistics, size) served by the Hub's service (``HfViewer``) or by the local DuckDB twin
  (``TwinViewer``) with the same JSON; ``trace_view`` reads conversations through either. What they show is
  redacted (``open_backend`` wraps them in ``RedactedViewer``; ``inspect_dataset`` and ``trace_view`` redact
  their own reports); a credential file is refused before anything is read or cached (``guard_paths``).
"""

from .backend import ViewerBackend, ViewerError
from .local import inspect_dataset
from .models import Column, ConversationStats, DatasetReport
from .traces import TraceView, trace_view

SOURCES = ("local", "hf")


def open_backend(source: str) -> ViewerBackend:
    """A new backend: 'local' (the twin over files) or 'hf' (the Hub's Datasets Viewer), its answers redacted
    (what it shows of the data is for an agent's eyes)."""
    from .redacted import RedactedViewer

    if source == "local":
        from .twin import TwinViewer

        return RedactedViewer(TwinViewer())
    if source == "hf":
        from .hf import HfViewer

        return RedactedViewer(HfViewer())
    raise ViewerError(f"Unknown viewer source '{source}'.", "use source='local' (a path) or source='hf' (a Hub id).",
                      "InvalidParameter")


__all__ = ["SOURCES", "Column", "ConversationStats", "DatasetReport", "TraceView", "ViewerBackend", "ViewerError",
           "inspect_dataset", "open_backend", "trace_view"]
