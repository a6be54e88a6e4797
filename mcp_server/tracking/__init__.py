"""Tracking room: Trackio runs — read from its local store, analysed, plotted, and written."""

from .analysis import CompareRow, MetricReport, RunReport, compare_runs, run_report
from .store import MetricPoint, RunSummary, TrackioStore

__all__ = ["CompareRow", "MetricPoint", "MetricReport", "RunReport", "RunSummary", "TrackioStore", "compare_runs",
           "run_report"]
