"""Settling a job after anyone looked at it — the same for the MCP tools and the CLI.

A job that ended has its worst-case budget charge replaced by its real cost. A remote training run that
completed is recorded in the registry with its Hub repo + commit, and tunepack's card goes to the Hub; a
remote eval that completed has its results recorded with the adapter. Each happens once (idempotent), so
every view of a job may call ``settle``.
"""

from __future__ import annotations

from ..approval import reconcile
from ..jobs import JobBackend, JobInfo


def settle(backend: JobBackend, info: JobInfo) -> dict | None:
    """What settling recorded for this job ({"registered": …} or {"evaluated": …}), or None."""
    reconcile(backend)
    if backend.name == "local" or info.stage != "COMPLETED":
        return None  # a local pipeline job registers its adapter itself
    stage = info.labels.get("stage")
    if stage == "train":
        from .remote import finish_remote

        return {"registered": finish_remote(backend, info.id)}
    if stage == "eval":
        from ..evals.service import eval_results

        return {"evaluated": eval_results(job_id=info.id, backend=backend)}
    return None
