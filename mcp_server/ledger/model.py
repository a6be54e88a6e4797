"""What the ledger holds and the rules that need no database: the experiment and plateau models, the
statuses, which way a metric improves, the config hash that detects repeats, and the checks on agent text
(bounded, credentials redacted)."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from datetime import datetime, timezone
from typing import Literal, overload

from pydantic import BaseModel, Field

from ..errors import LedgerError
from ..redact import redact_text

STATUSES = ("proposed", "running", "keep", "discard", "crash")
FINISHED = ("keep", "discard", "crash")
Direction = Literal["max", "min"]
_LOWER_IS_BETTER = ("loss", "perplexity", "ppl", "error", "wer", "cer", "latency", "cost", "nll", "divergence")
_LOWER_IS_BETTER_WORDS = ("kl", "jsd")  # as a whole part of the name only (eval/distill/kl)
VARIABLE = re.compile(r"[A-Za-z0-9_.\-\[\]/:@]{1,200}")
MAX_TEXT = 4000  # characters of a hypothesis, value, expectation, note, metric name or job id

class Experiment(BaseModel):
    id: int
    project: str
    hypothesis: str
    parent: int | None = Field(description="The experiment this one changes one variable of (None: a baseline).")
    variable: str = Field(description="The one variable changed, e.g. training.learning_rate.")
    value: str | None = Field(description="Its new value, as text.")
    expected: str | None = Field(description="The effect the planner expects.")
    config_hash: str
    status: str
    worker: str | None
    job_id: str | None
    metric_name: str | None
    metric_value: float | None
    note: str | None
    do_not_repeat: bool
    created_at: str
    claimed_at: str | None
    finished_at: str | None


class Plateau(BaseModel):
    should_stop: bool
    reason: str
    k: int = Field(description="Finished experiments without improvement that mean stop.")
    metric: str | None
    direction: str | None
    best_id: int | None
    best_value: float | None
    since_best: int = Field(description="Finished experiments after the best one.")
    finished: int


def direction_for(metric: str | None) -> Direction:
    """'min' for losses, perplexity, NLL, divergences (KL), error rates, latency and cost; 'max' for everything else."""
    name = (metric or "").lower()
    parts = set(re.split(r"[/_.\-]", name))
    return "min" if any(word in name for word in _LOWER_IS_BETTER) or parts & set(_LOWER_IS_BETTER_WORDS) else "max"


def config_hash_of(config: dict | None = None, *, parent_hash: str | None = None, variable: str = "",
                   value: str | None = None) -> str:
    """A short stable hash: of the full config when given, else of (parent's hash, variable, value)."""
    payload = config if config is not None else {"parent": parent_hash, "variable": variable, "value": value}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


@overload
def clean_text(text: str) -> str: ...
@overload
def clean_text(text: None) -> None: ...
@overload
def clean_text(text: str | None) -> str | None: ...
def clean_text(text: str | None) -> str | None:
    """Text an agent wrote, with any credential pasted into it redacted (the ledger is shared and exported)."""
    return redact_text(text, Counter()) if text else text


def check_bounded(**texts: str | None) -> None:
    for name, text in texts.items():
        if text is not None and len(text) > MAX_TEXT:
            raise LedgerError(f"The experiment's {name} is {len(text)} characters long; the ledger keeps at most "
                              f"{MAX_TEXT}.", f"shorten the {name}: say it in a few sentences and point at files or "
                              "job logs for the details.")


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def is_better(value: float, than: float | None, direction: str, min_delta: float) -> bool:
    if than is None:
        return True
    return value > than + min_delta if direction == "max" else value < than - min_delta
