"""A loop's state (``<tunepack home>/loops/NAME/state.json``), written whole under a lock after every phase of a
cycle, so a cycle re-run after a crash resumes where it stopped and never trains or promotes twice.

The state holds the frozen set (session keys and content hashes, fixed at the first cycle), the sessions each
cycle consumed, the recent slice waiting to train in the next cycle, the adapter in use (``current``) and one
record per cycle: its phase (selected → training → trained → scored → decided), the training job, the candidate,
the scores and the decision with its reason.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from filelock import FileLock
from pydantic import BaseModel, Field

from ..home import home_dir
from ..staging import write_text_atomically

Phase = Literal["selected", "training", "trained", "scored", "decided", "refused"]


class Cycle(BaseModel):
    number: int
    phase: Phase = "selected"
    started_at: float = Field(default_factory=time.time)
    new: list[str] = Field(default_factory=list, description="session keys trained this cycle")
    recent: list[str] = Field(default_factory=list, description="session keys held out as this cycle's recent slice")
    from_adapter: str | None = None  # the registry ref training started from (None: the base model)
    rows_path: str | None = None
    job_id: str | None = None
    candidate: str | None = None  # NAME@vN once trained and registered
    scores: dict = Field(default_factory=dict)
    decision: str | None = None  # promote | keep
    reason: str | None = None
    refused: str | None = None


class LoopState(BaseModel):
    name: str
    frozen: dict[str, str] = Field(default_factory=dict, description="frozen session key -> content hash")
    consumed: list[str] = Field(default_factory=list, description="session keys trained or held out so far")
    pending_recent: list[str] = Field(default_factory=list, description="last cycle's recent slice: trains next")
    current: str | None = None  # the promoted adapter in use (None: the base model)
    cycles: list[Cycle] = Field(default_factory=list)

    @property
    def open_cycle(self) -> Cycle | None:
        """The last cycle when it has not finished (a crash left it in a phase before ``decided``)."""
        last = self.cycles[-1] if self.cycles else None
        return last if last is not None and last.phase not in ("decided", "refused") else None

    @property
    def done_cycles(self) -> int:
        return sum(c.phase == "decided" for c in self.cycles)


def loop_dir(name: str) -> Path:
    return home_dir("loops", name)


def read_state(name: str) -> LoopState:
    path = loop_dir(name) / "state.json"
    if not path.is_file():
        return LoopState(name=name)
    return LoopState.model_validate_json(path.read_text(encoding="utf-8"))


def write_state(state: LoopState) -> None:
    write_text_atomically(loop_dir(state.name) / "state.json", json.dumps(state.model_dump(mode="json"), indent=2))


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """One cycle of a loop at a time (a second one waits up to a minute, then is refused by the caller)."""
    with FileLock(str(loop_dir(name) / "state.lock"), timeout=60):
        yield
