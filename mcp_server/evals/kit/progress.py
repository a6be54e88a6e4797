"""Where an eval is, as log markers the job's reader shows (jobs_wait / jobs_status: task, model, items done of
total, seconds left), and the partial results a finished task leaves behind.

    meter = Meter("next-action", "adapter", total=257)
    meter(done)                      # prints TUNEPACK_EVALPROGRESS {...} at most every few seconds, and at the end

The marker format is tunepack's log protocol (mcp_server/jobs/markers.py); the kit prints it itself because it runs
inside the eval job without the rest of tunepack.
"""

from __future__ import annotations

import json
import time

PREFIX = "TUNEPACK_"


def marker(kind: str, payload: dict) -> None:
    print(f"{PREFIX}{kind} " + json.dumps(payload, default=str), flush=True)


class Meter:
    """Progress of one task on one model; ``every_s`` apart at most, the first and last items always."""

    def __init__(self, task: str, model: str, total: int, every_s: float = 5.0):
        self.task, self.model, self.total, self.every_s = task, model, total, every_s
        self.started = time.monotonic()
        self.last = -1e9
        self(0)

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if 0 < done < self.total and now - self.last < self.every_s:
            return
        self.last = now
        rate = done / (now - self.started) if done and now > self.started else None
        eta = round((self.total - done) / rate, 1) if rate else None
        marker("EVALPROGRESS", {"task": self.task, "model": self.model, "done": done, "total": self.total,
                                "eta_s": eta})
