"""What an agent wants to know about a job in one read: its stage, its training progress from the
metric lines, the outcome the job announced, or the error it died with — and its log in bounded
pages (``since`` cursors), never the whole file."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .base import JobBackend, JobInfo, failure_error, progress_of
from .markers import parse

MAX_LINES = 200
MAX_LINE_CHARS = 400
MAX_CHARS = 7000  # keeps a page, with its JSON framing, near 8 KB
OUTCOME_MARKERS = ("REGISTERED", "PREFLIGHT", "DONE", "MASK")  # MASK: a --check-only job (remote preflight)


class Progress(BaseModel):
    """A training job's last logged step, or an eval job's place: task, model, items done of total, time left."""

    step: int | None = None
    max_steps: int | None = None
    loss: float | None = None
    eval_loss: float | None = None
    task: str | None = None
    model: str | None = None
    done: int | None = None
    total: int | None = None
    eta_s: float | None = Field(None, description="seconds left in this task and model at the current rate")
    tasks_done: list[str] | None = Field(None, description="eval tasks whose results are already recorded")


class JobView(BaseModel):
    job: JobInfo
    progress: Progress | None = Field(None, description="last logged training step, or an eval's task and items")
    outcome: dict | None = Field(None, description="what the job announced at its end (registered adapter, "
                                 "preflight result, saved adapter)")
    error: str | None = Field(None, description="why the job failed and what to do, when it failed")
    next_step: str = ""


class LogsView(BaseModel):
    job_id: str
    lines: list[str]
    first_line: int = Field(description="index of the first returned line in the whole log")
    next_since: int = Field(description="pass as `since` to get only lines written after these")
    total_lines: int
    note: str = ""


def describe(backend: JobBackend, job_id: str) -> JobView:
    info = backend.status(job_id)
    text = backend.logs(job_id)
    found = parse(text)  # the log is read and parsed once
    metric = progress_of(found)
    progress = None
    evaluating = (found.get("EVALPROGRESS") or found.get("EVALPARTIAL")) and (not metric or found.get("REGISTERED"))
    if metric and not evaluating:  # a pipeline job's eval, after training, shows the eval's progress
        losses = [m for m in found.get("METRIC", []) if "loss" in m]
        evals = [m for m in found.get("METRIC", []) if "eval_loss" in m]
        progress = Progress(step=metric["step"], max_steps=metric.get("max_steps"),
                            loss=losses[-1]["loss"] if losses else None,
                            eval_loss=evals[-1]["eval_loss"] if evals else None)
    elif evaluating:
        at = (found.get("EVALPROGRESS") or [{}])[-1]
        progress = Progress(**{k: at.get(k) for k in ("task", "model", "done", "total", "eta_s")},
                            tasks_done=(found.get("EVALPARTIAL") or [{}])[-1].get("done"))
    outcome = next((found[k][-1] for k in OUTCOME_MARKERS if found.get(k)), None)
    if outcome and "manifest" in outcome:  # remote runs carry their whole manifest: too big for a result
        outcome = {k: v for k, v in outcome.items() if k != "manifest"}
    evaluated = found["EVALUATED"][-1] if found.get("REGISTERED") and found.get("EVALUATED") else None
    if outcome is not None and evaluated:  # a pipeline job's own eval: its table, and a withdrawal said plainly
        outcome = {**outcome, "eval_table": evaluated.get("table"), "withdrawn": evaluated.get("withdrawn")}
    error = None
    if info.stage in ("ERROR", "CANCELED"):
        error = str(failure_error(info, text, found))
    nxt = {"SCHEDULING": "waiting for a free slot; call jobs_wait",
           "RUNNING": "call jobs_wait (it waits up to 240 s by default, 600 s at most) or jobs_logs",
           "COMPLETED": "done; read the outcome", "ERROR": "read the error, fix, and resubmit",
           "CANCELED": "canceled"}.get(info.stage, "")
    sweep = info.labels.get("sweep") if info.labels.get("stage") == "sweep" else None
    if sweep and not info.done:  # a sweep's controller logs no steps of its own: its runs are in sweep_status
        nxt = (f"this is sweep {sweep}'s controller: it ends when every run has; sweep_status('{sweep}') shows each "
               "run's step, loss and state now")
    if info.stage == "COMPLETED" and outcome and outcome.get("withdrawn"):
        nxt = (f"{outcome.get('registry_name')} v{outcome.get('registry_version')} was trained, evaluated and then "
               f"withdrawn (output.register_when: beats_base): it {outcome['withdrawn']}. Tell the user; the scores "
               "are in outcome.eval_table")
    return JobView(job=info, progress=progress, outcome=outcome, error=error, next_step=nxt)


def read_logs(backend: JobBackend, job_id: str, tail: int = 100, since: int | None = None) -> LogsView:
    lines = backend.logs(job_id).splitlines()
    total = len(lines)
    tail = max(1, min(tail, MAX_LINES))
    if since is not None:
        start = max(0, min(since, total))
        chosen = lines[start:start + MAX_LINES]
    else:
        start = max(0, total - tail)
        chosen = lines[start:]
    size, kept = 0, 0
    for line in (chosen if since is not None else reversed(chosen)):
        size += min(len(line), MAX_LINE_CHARS) + 8
        if size > MAX_CHARS:
            break
        kept += 1
    if since is not None:
        chosen = chosen[:kept]
    else:
        start += len(chosen) - kept
        chosen = chosen[len(chosen) - kept:]
    note = ""
    if since is not None and start + len(chosen) < total:
        note = f"more lines follow: call again with since={start + len(chosen)}"
    elif since is None and start > 0:
        note = f"showing the last {len(chosen)} of {total} lines; use since=0 to page from the start"
    cut = [line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " …" for line in chosen]
    return LogsView(job_id=job_id, lines=cut, first_line=start, next_since=start + len(chosen), total_lines=total,
                    note=note)
