"""The log-marker protocol: how a job tells tunepack what happened, in its ordinary log.

A job prints ``TUNEPACK_<KIND> {json}`` lines among its other output; tunepack reads the log once
(``parse``) and picks the payloads it needs. The kinds, who prints them, and what they carry are in
``KINDS`` (a test holds every writer to it; readers ignore kinds they do not know). Standard library only: the rendered training and eval scripts embed this file verbatim
(as they do the mask check), so every writer and every reader share one definition.

    emit("METRIC", {"step": 10, "loss": 1.25})        # prints: TUNEPACK_METRIC {"step": 10, "loss": 1.25}
    parse(log_text).get("METRIC", [])                  # [{"step": 10, "loss": 1.25}, …]
"""

from __future__ import annotations

import json
import os

MARKER_PREFIX = "TUNEPACK_"
KINDS = {
    "WINDOWS": "training script: the window plan of long sessions (turns trained and dropped, compute multiplier)",
    "MASK": "training script: the mask check report (rows checked, trained share, longest row)",
    "METRIC": "training script: one Trainer log (step, max_steps, loss, eval_loss, …)",
    "DONE": "training script: finished (steps, losses, manifest, adapter folder or Hub repo + commit)",
    "ERROR": "any job: why it failed, as kind + problem + fix",
    "REGISTERED": "pipeline job: the adapter's registry version, card and Trackio run",
    "EVALUATED": "pipeline or eval job: the evaluation summary recorded with the adapter",
    "EVAL": "eval script: the raw results",
    "EVALPROGRESS": "eval script: where it is (task, model, items done of total, seconds left at this rate)",
    "EVALPARTIAL": "eval script: a task finished; the results so far are in results.partial.json (done, missing)",
    "PREFLIGHT": "preflight job: pass or fail, with each check",
    "ALERT": "GRPO script: reward hacking suspected (title, reason, step, whether the run stopped)",
    "LOOP": "loop cycle job (local or scheduled on HF): the cycle's outcome (decision, reason, the promoted revision, cycles run and "
            "the approval's spend, the schedule suspended)",
    "RLCHECK": "GRPO script (--rl-check): prompts, the ceiling, the starting model's groups, sizing, generation",
}


def marker_line(kind: str, payload: dict) -> str:
    return f"{MARKER_PREFIX}{kind} " + json.dumps(payload, default=str)


def emit(kind: str, payload: dict) -> None:
    """Print one marker line. With several processes (RANK set) only rank 0 speaks, except for errors."""
    if kind != "ERROR" and int(os.environ.get("RANK", "0") or 0) != 0:
        return
    print(marker_line(kind, payload), flush=True)


def parse_line(line: str) -> tuple[str, dict] | None:
    """(kind, payload) of a marker line, None for any other line (or a marker whose JSON is cut)."""
    line = line.strip()
    if not line.startswith(MARKER_PREFIX):
        return None
    head, _, body = line.partition(" ")
    kind = head[len(MARKER_PREFIX):]
    if kind not in KINDS:
        return None
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    return (kind, payload) if isinstance(payload, dict) else None


def parse(log_text: str) -> dict[str, list[dict]]:
    """Every marker of a log at once, by kind, in log order."""
    found: dict[str, list[dict]] = {}
    for line in log_text.splitlines():
        marker = parse_line(line)
        if marker:
            found.setdefault(marker[0], []).append(marker[1])
    return found
