"""Tracking room: Trackio runs — read from its local store, analysed, plotted, and written."""

from .analysis import CompareRow, MetricReport, RunReport, compare_runs, run_report
from .store import MetricPoint, RunSummary, TrackioStore, points_from_metric_lines, summarize

__all__ = ["CompareRow", "MetricPoint", "MetricReport", "RunReport", "RunSummary", "TrackioStore", "compare_runs", "points_from_metric_lines", "summarize",
           "run_report"]
