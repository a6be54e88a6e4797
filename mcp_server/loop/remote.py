"""A loop on HF Jobs: a scheduled job (huggingface_hub's ``create_scheduled_uv_job``) runs one cycle each time it
fires, on HF's machine, against a Hub repo that holds the loop's state.

    tunepack loop schedule loop.yaml --backend hf --flavor a10g-small --timeout 3600 [--at @weekly] [--max-spend USD]
    tunepack loop sync NAME                      # sync.py: the promotion, into the local registry

This module is the state on the Hub and the bounds read from it (what the job and sync read); schedule.py writes
the state repo and creates the scheduled job from this machine.

A scheduled job cannot reach this machine's registry, quotes or budget, so everything a cycle needs is on the Hub:

- the state repo (a private dataset; the spec's ``state_repo``, else NAMESPACE/NAME-loop):
  ``loop_state.json``  the approval (schedule, flavor, timeout, price, max_cycles, max_spend_usd), the schedule's
                       id, cycles run, the approval's spend so far, the frozen set's hashes, the sessions consumed,
                       the promoted revision, each run's outcome, and why the schedule was suspended;
  ``spec/``            the loop spec, its training config and its retention set, as approved;
  ``code/``            tunepack's package as installed here when the loop was scheduled: the job mounts it at that
                       commit, so each run executes the code that was approved;
  ``home/``            the loop's working state between runs (loops/NAME, registry/NAME without the weights of the
                       adapters no longer in use, the tiny replicas a tiny model was built as);
- the adapter repo (a private model repo, NAMESPACE/NAME): one commit per promoted adapter, the tag ``current`` on
  the one in use.

What one run does is in ``remote_job.py``. The approval of a schedule binds its whole bound: at most ``max_cycles``
cycles and ``max_spend_usd`` (by default max_cycles times one run's worst case, price x timeout), and the budget
is charged that bound the day it is approved. The job itself refuses to train past either bound (reading the
state) and suspends its schedule.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from .. import hf_auth
from ..errors import LoopError

STATE_FILE = "loop_state.json"
FINAL = ("COMPLETED", "ERROR", "CANCELED", "DELETED")


class Approval(BaseModel):
    """What the human approved: its bound is max_spend_usd and max_cycles, whichever comes first."""

    id: str = Field(description="labels every run of this approval's schedule (tunepack_approval)")
    namespace: str
    schedule: str
    flavor: str
    timeout_s: int
    price_per_hour_usd: float
    per_cycle_usd: float = Field(description="one run's worst case: price x timeout")
    max_cycles: int
    max_spend_usd: float
    code_commit: str | None = None
    approved_at: float = Field(default_factory=time.time)


class Promoted(BaseModel):
    ref: str  # NAME@vN in the job's registry (restored from home/ each run)
    repo: str
    commit: str
    cycle: int


class RemoteRun(BaseModel):
    job_id: str | None = None
    at: float = Field(default_factory=time.time)
    outcome: str  # promote | keep | no cycle | refused
    cycle: int | None = None
    reason: str = ""
    spend_usd: float = 0.0  # the approval's spend when this run ended


class RemoteState(BaseModel):
    name: str
    state_repo: str
    adapter_repo: str
    approval: Approval
    schedule_id: str | None = None
    cycles_run: int = 0
    spend_usd: float = 0.0
    frozen: dict[str, str] = Field(default_factory=dict, description="frozen session key -> content hash")
    consumed: list[str] = Field(default_factory=list)
    current: Promoted | None = None
    runs: list[RemoteRun] = Field(default_factory=list)
    suspended: str | None = None  # why the job suspended its schedule

# --- the state file on the Hub ----------------------------------------------------------------------------------

def read_remote_state(api, state_repo: str) -> RemoteState | None:
    """loop_state.json at the head of the state repo; None when the repo or the file is not there."""
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

    try:
        path = api.hf_hub_download(state_repo, STATE_FILE, repo_type="dataset", revision="main")
    except (EntryNotFoundError, RepositoryNotFoundError):
        return None
    except Exception as exc:  # noqa: BLE001 — transport errors share no base class
        raise hf_auth.http_error(exc, action="Reading the loop's state", repo_id=state_repo) from None
    return RemoteState.model_validate_json(Path(path).read_text(encoding="utf-8"))


def write_remote_state(api, state: RemoteState, message: str) -> str:
    try:
        return api.upload_file(path_or_fileobj=state.model_dump_json(indent=2).encode(), path_in_repo=STATE_FILE,
                               repo_id=state.state_repo, repo_type="dataset", commit_message=message).oid
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Writing the loop's state", repo_id=state.state_repo) from None


def job_cost(job, approval: Approval, *, now: float | None = None, running_as_elapsed: str | None = None) -> float:
    """What one run of the approval costs: a finished run its runtime x price, a run not yet ended its worst case
    (``running_as_elapsed``: that run's id, counted at its runtime so far — the run asking, about to end)."""
    stage = job.status.stage if job.status else "SCHEDULING"
    start = job.started_at or job.created_at
    if stage in FINAL or job.id == running_as_elapsed:
        if start is None or (stage in FINAL and job.finished_at is None):
            return 0.0
        end = job.finished_at.timestamp() if stage in FINAL else (now or time.time())
        seconds = max(0.0, end - start.timestamp())
        return min(approval.price_per_hour_usd * seconds / 3600, approval.per_cycle_usd)
    return approval.per_cycle_usd


def approval_spend(api, approval: Approval, *, running_as_elapsed: str | None = None) -> tuple[float, list]:
    """(the approval's spend so far, its runs): every job labelled with the approval, read from the Jobs API — a run
    that crashed before it could write the state counts too."""
    try:
        jobs = list(api.list_jobs(namespace=approval.namespace, labels={"tunepack_approval": approval.id}))
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Listing the loop's runs", namespace=approval.namespace) from None
    total = sum(job_cost(j, approval, running_as_elapsed=running_as_elapsed) for j in jobs)
    return round(total, 4), jobs


def refusal(state: RemoteState, spent: float) -> LoopError | None:
    """Why no (further) cycle may run under this approval, or None. ``spent`` counts the run in question at its
    worst case."""
    approval = state.approval
    if state.cycles_run >= approval.max_cycles:
        return LoopError(f"The loop '{state.name}' ran its {approval.max_cycles} approved cycle(s) "
                         f"(spend so far ${state.spend_usd:.2f} of ${approval.max_spend_usd:.2f}).",
                         "schedule it again (`tunepack loop schedule`) with a higher max_cycles: a new approval.")
    if spent > approval.max_spend_usd + 1e-9:
        return LoopError(f"A cycle of the loop '{state.name}' may cost up to ${approval.per_cycle_usd:.2f}, which "
                         f"would take its spend to ${spent:.2f}, past the approved ${approval.max_spend_usd:.2f}.",
                         "schedule it again (`tunepack loop schedule`) with a higher --max-spend: a new approval.")
    return None
