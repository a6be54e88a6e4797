"""What the CLI commands share: JSON output, progress lines from job logs, following a job, the spend report."""

from __future__ import annotations

import json
import sys


def print_json(data: object) -> None:
    print(json.dumps(data, indent=2, default=str))


def _metric_line(m: dict) -> str | None:
    if "loss" in m:
        parts = [f"step {m['step']}/{m['max_steps']}", f"loss {m['loss']:.4f}"]
        if "mean_token_accuracy" in m:
            parts.append(f"token acc {m['mean_token_accuracy']:.3f}")
        if "learning_rate" in m:
            parts.append(f"lr {m['learning_rate']:.2e}")
        return "  ".join(parts)
    if "eval_loss" in m:
        return f"step {m['step']}/{m['max_steps']}  eval loss {m['eval_loss']:.4f}"
    return None


def progress(verbose: bool):
    """Turn job log lines into short progress lines on stderr."""
    from ..jobs.markers import parse_line

    def show(line: str) -> None:
        marker = parse_line(line)
        if marker and marker[0] == "METRIC":
            text = _metric_line(marker[1])
            if text:
                print("  " + text, file=sys.stderr, flush=True)
        elif line.startswith("[tunepack]") or verbose:
            print("  " + line, file=sys.stderr, flush=True)

    return show


def follow(backend, job_id: str, on_line=None, *, cancel: bool = True):
    """Wait for a job; Ctrl-C cancels it (``cancel``) or only stops following it, and says which."""
    try:
        return backend.wait(job_id, on_line=on_line)
    except KeyboardInterrupt:
        if cancel:
            backend.cancel(job_id)
            raise KeyboardInterrupt(f"job {job_id} was cancelled") from None
        raise KeyboardInterrupt(f"stopped following job {job_id}, which keeps running on {backend.name}: "
                                f"`tunepack jobs status {job_id} --backend {backend.name}` (or `jobs cancel`)"
                                ) from None


def report_spend(outcome) -> None:
    """What a paid job costs at most and what is left of the day's budget (stderr)."""
    if outcome.cost.paid and outcome.budget:
        b = outcome.budget
        print(f"tunepack: charged up to ${outcome.cost.worst_case_usd:.2f} to project '{b.project}' "
              f"(${b.charged_usd:.2f} of ${b.limit_usd:.2f} today; ${b.remaining_usd:.2f} left)", file=sys.stderr)
