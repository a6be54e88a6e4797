"""Tracking room: Trackio runs, read from its local store."""

from .store import MetricPoint, RunSummary, TrackioStore

__all__ = ["MetricPoint", "RunSummary", "TrackioStore"]
