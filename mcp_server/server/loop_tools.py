"""The continual-learning loop as tools (their CLI twin: ``tunepack loop``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from ..jobs import JobInfo
from .common import guarded

LoopSpecPath = Annotated[str, Field(description="Path of the loop spec (loop.yaml: name, config, sources, "
                                                "frozen_sessions, retention, promote).")]


class LoopStarted(BaseModel):
    job: JobInfo
    next_step: str


class LoopView(BaseModel):
    name: str
    current: str | None = Field(description="The adapter in use (NAME@vN); null: the base model.")
    frozen_sessions: int
    cycles: list[dict[str, Any]] = Field(description="Per cycle: number, phase, sessions trained, recent slice, "
                                                     "candidate, paired scores, decision and reason.")


@guarded
def loop_cycle(spec_path: LoopSpecPath) -> LoopStarted:
    """Run (or resume after a crash) the loop's next cycle as a local job: the sessions new since the last
    cycle, trained from the adapter in use, scored paired against it on the frozen set + recent slice and the
    retention set; promoted only when significantly better with retention kept. Follow it with jobs_wait."""
    from ..jobs import JobSpec, get_backend
    from ..loop import load_spec

    spec = load_spec(spec_path)  # a spec that does not load is refused now, before a job starts
    job = get_backend("local").submit(JobSpec(module="mcp_server.loop.job", args=[spec_path], name=f"loop-{spec.name}",
                                              labels={"loop": spec.name, "stage": "loop", "slot": "none"}))
    return LoopStarted(job=job, next_step=f"jobs_wait('{job.id}'): its TUNEPACK_LOOP line is the decision (or its "
                                          f"TUNEPACK_ERROR why no cycle ran); then loop_status('{spec.name}')")


@guarded
def loop_status(name: Annotated[str, Field(description="The loop's name (loop.yaml's name).")]) -> LoopView:
    """The loop's cycles with their decisions and reasons, and the adapter in use."""
    from ..loop import read_state

    state = read_state(name)
    return LoopView(name=state.name, current=state.current, frozen_sessions=len(state.frozen),
                    cycles=[c.model_dump(mode="json", exclude={"rows_path"}) for c in state.cycles])


TOOLS = [loop_cycle, loop_status]
