"""The continual-learning loop as tools (their CLI twin: ``tunepack loop``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

from ..errors import TunepackError
from ..jobs import JobInfo, estimate
from .common import Approval, ApprovalToken, can_elicit, consent_from, guarded
from .pipeline_tools import SpendResult, spend_result

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
    where = str(Path(spec_path).expanduser().resolve())  # the job runs in its own folder: a relative path would miss
    job = get_backend("local").submit(JobSpec(module="mcp_server.loop.job", args=[where], name=f"loop-{spec.name}",
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


ScheduleFlavor = Annotated[str, Field(description="Hardware of each cycle's HF job (see jobs_hardware), e.g. a10g-small.")]
CycleTimeout = Annotated[int, Field(ge=60, description="Each cycle's job is killed after this many seconds: with the "
                                                       "flavor's price, one cycle's worst case.")]
When = Annotated[str, Field(description="When it fires: @hourly, @daily, @weekly, @monthly or a CRON expression.")]
MaxSpend = Annotated[float | None, Field(gt=0, description="The most all its cycles may cost together, in USD "
                                                           "(default: max_cycles x one cycle's worst case).")]


def ask_to_schedule(ctx: Context, spec_path: LoopSpecPath, flavor: ScheduleFlavor, timeout_s: CycleTimeout,
                    max_spend_usd: MaxSpend = None):
    """Resolver: ask the human (elicitation) to approve the schedule's whole bound; None = nobody was asked (the
    approval room quotes it and returns a token)."""
    if not can_elicit(ctx):
        return None
    try:
        from ..loop import load_spec
        from ..loop.schedule import check_remote_spec, check_sources_exist

        spec = load_spec(spec_path)
        check_remote_spec(spec)
        check_sources_exist(spec)  # nobody is asked to approve a schedule whose runs would find no sessions
        one = estimate("hf", flavor, timeout_s)
    except TunepackError:
        return None  # the tool body reports the real error
    bound = max_spend_usd if max_spend_usd is not None else one.worst_case_usd * spec.max_cycles
    return Elicit(f"tunepack wants to schedule the loop '{spec.name}' on HF Jobs ({one.flavor}, "
                  f"${one.price_per_hour_usd:.2f}/h, timeout {timeout_s} s a cycle): at most {spec.max_cycles} "
                  f"cycle(s) and ${bound:.2f} in all. Approve?", Approval)


ScheduleApproval = Annotated[ElicitationResult[Approval], Resolve(ask_to_schedule)]


class LoopScheduled(SpendResult):
    state_repo: str | None = Field(None, description="The private Hub repo that holds (or would hold) the loop's "
                                                     "state, counters and spend.")
    adapter_repo: str | None = Field(None, description="Where promoted adapters go (tag `current`).")
    schedule_id: str | None = None
    per_cycle_usd: float
    bound_usd: float = Field(description="The approved bound of all its cycles together.")
    max_cycles: int = Field(description="The cycles approved (the quote's cost.replicas counts them).")
    uploads: list[str] = Field(default_factory=list, description="Files that go to the state repo from here: the "
                                                                 "spec, its training config, its retention set.")


@guarded
def loop_schedule(ctx: Context, spec_path: LoopSpecPath, approval: ScheduleApproval, flavor: ScheduleFlavor,
                  timeout_s: CycleTimeout, schedule: When = "@weekly", max_spend_usd: MaxSpend = None,
                  approval_token: ApprovalToken = None) -> LoopScheduled:
    """Run the loop on HF Jobs: a scheduled job runs one cycle each time it fires, its state (cycles, sessions
    consumed, frozen hashes, spend) in a Hub repo; it refuses past max_cycles or the spend bound and suspends its
    schedule. Paid: a human approves the whole bound (elicitation, or a quote's approval_token)."""
    from ..loop.schedule import schedule_loop

    done = schedule_loop(spec_path, flavor=flavor, timeout_s=timeout_s, schedule=schedule,
                         max_spend_usd=max_spend_usd, consent=consent_from(approval, approval_token, ctx))
    name = done.spend.job.labels.get("tunepack_loop", "") if done.spend.job else ""
    base = spend_result(done.spend, next_step=(
        f"the first cycle runs when the schedule fires ({schedule}); loop_sync('{name}') then shows its state and "
        "brings a promoted adapter into the registry") if done.spend.job else None)
    return LoopScheduled(**base.model_dump(), state_repo=done.state_repo, adapter_repo=done.adapter_repo,
                         schedule_id=done.schedule_id, per_cycle_usd=done.per_cycle_usd, bound_usd=done.bound_usd,
                         max_cycles=done.max_cycles, uploads=done.uploads)


class LoopSynced(BaseModel):
    state_repo: str
    cycles_run: int
    spend_usd: float
    max_cycles: int
    max_spend_usd: float
    suspended: str | None = Field(None, description="Why its schedule was suspended (its bound reached), if it was.")
    current: dict[str, Any] | None = Field(None, description="The promoted adapter on the Hub (repo, commit, cycle); "
                                                             "null: nothing promoted yet.")
    registered: str | None = Field(None, description="The promoted adapter in this machine's registry (NAME@vN).")
    already: bool = Field(False, description="It was in the registry before this call.")


@guarded
def loop_sync(name: Annotated[str, Field(description="The loop's name (loop.yaml's name).")],
              state_repo: Annotated[str | None, Field(description="The loop's state repo (default: the one it was "
                                                                  "scheduled with, else NAMESPACE/NAME-loop).")] = None
              ) -> LoopSynced:
    """A scheduled loop's state from its Hub repo (cycles run, spend, suspended), and its promoted adapter (tag
    `current`) recorded in the local registry, so eval_start, registry_publish and the next loop can use it."""
    from ..loop.sync import sync_loop

    done = sync_loop(name, state_repo)
    return LoopSynced(**done.model_dump(mode="json", exclude={"current"}),
                      current=done.current.model_dump(mode="json") if done.current else None)


TOOLS = [loop_cycle, loop_status, loop_schedule, loop_sync]
