"""MCP tools over sweeps (mcp_server.sweeps): plan, submit (one approval for a paid sweep), status,
select, report, cancel. Every call returns at once; the sweep's controller runs as a local job."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Annotated, Literal, NamedTuple, TypeVar

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel, Field

from ..errors import TunepackError
from ..sweeps import (
    Selection,
    SubmitResult,
    SweepError,
    SweepPlan,
    SweepStatusView,
    cancel_sweep,
    plan_sweep,
    resume_sweep,
    select_sweep,
    submit_sweep,
)
from ..sweeps.plan import build_plan
from .common import Approval, ApprovalToken, can_elicit, consent_from, guarded

SpecPath = Annotated[str | None, Field(description="A sweep spec YAML (e.g. examples/sweep.yaml; its keys: "
                                                   "skill tunepack-sweeps).")]
SpecDict = Annotated[dict | None, Field(description="Or the spec itself as a mapping (same keys as the YAML; base "
                                                    "is a config path relative to the server's folder).")]
SweepId = Annotated[str, Field(description="The sweep id sweep_submit returned.")]


class SweepReport(BaseModel):
    sweep_id: str
    markdown: str = Field(description="The report: summary, one row per run (best first), best adapter, alerts.")
    markdown_path: str
    png_path: str | None = Field(description="The curves (also returned as an image).")


def _source(spec_path: str | None, spec: dict | None) -> str | dict:
    source = spec_path or spec
    if not source or (spec_path and spec):
        raise SweepError("Give exactly one of spec_path or spec.",
                         "pass spec_path='examples/sweep.yaml', or the spec as a mapping in spec.")
    return source


class Built(NamedTuple):
    """The sweep planned once per call (shared by the approval question and the tool body)."""
    built: tuple | None  # what build_plan returned: plan, configs, spec
    error: TunepackError | None = None


def build(spec_path: str | None = None, spec: dict | None = None, resume: str | None = None) -> Built:
    if resume:
        return Built(None)
    try:
        return Built(build_plan(_source(spec_path, spec)))
    except TunepackError as exc:
        return Built(None, exc)


def ask_to_sweep(ctx: Context, planned: Annotated[Built, Resolve(build)]):
    """Resolver: one elicitation for a whole paid sweep, when the client can show it; None = nobody was asked."""
    if planned.built is None or not can_elicit(ctx):  # a client that can ask always does: tokens never approve there
        return None
    plan = planned.built[0]
    if not plan.needs_approval or not plan.within_budget:
        return None
    return Elicit(f"tunepack wants to start sweep '{plan.name}' of {plan.model}: {plan.total_runs} jobs on {plan.backend}/"
                  f"{plan.flavor} (at most {plan.max_concurrent} at once); it may cost up to "
                  f"${plan.total_worst_case_usd:.2f} in total. Approve?", Approval)


SweepApproval = Annotated[ElicitationResult[Approval], Resolve(ask_to_sweep)]
MAX_RESULT = 7500  # characters of JSON: results stay near 8 KB however large the sweep


def _size(model: BaseModel) -> int:
    return len(model.model_dump_json())


def _fit_plan(plan: SweepPlan) -> SweepPlan:
    if _size(plan) <= MAX_RESULT:
        return plan
    plan = plan.model_copy(deep=True)
    hidden: list[str] = []
    while len(plan.runs) > 1 and _size(plan) > MAX_RESULT - 200:
        hidden.insert(0, plan.runs.pop().id)
    plan.notes.append(f"{len(hidden)} more runs not shown ({hidden[0]} … {hidden[-1]}); totals cover all of them; "
                      "`tunepack sweep plan SPEC --json` lists every run")
    return plan


_View = TypeVar("_View", SweepStatusView, Selection)


def _fit_rows(view: _View, rows: str, note_field: str) -> _View:
    """Drop the markdown table first, then the last rows, until the result fits."""
    if _size(view) <= MAX_RESULT:
        return view
    view = view.model_copy(deep=True)
    view.table = "(table left out to keep the result small: sweep_report has it)"
    items = getattr(view, rows)
    hidden = 0
    while len(items) > 1 and _size(view) > MAX_RESULT - 200:
        items.pop()
        hidden += 1
    if hidden:
        setattr(view, note_field, getattr(view, note_field) + f" ({hidden} more rows not shown: "
                "`tunepack sweep status SWEEP_ID --json` has them all)")
    return view


@guarded
def sweep_plan(spec_path: SpecPath = None, spec: SpecDict = None) -> SweepPlan:
    """Plan a sweep without starting anything: each run's config diff, flavor, processes, expected time and
    cost, the canary, the total against the budget cap, and the runs the ledger refuses (do-not-repeat or
    already tried)."""
    return _fit_plan(plan_sweep(_source(spec_path, spec)))


@guarded
def sweep_submit(ctx: Context, approval: SweepApproval, planned: Annotated[Built, Resolve(build)], spec_path: SpecPath = None,
                 spec: SpecDict = None,
                 resume: Annotated[str | None, Field(description="Instead of a spec: the id of a sweep whose "
                                                                 "controller crashed, to resume it.")] = None,
                 approval_token: ApprovalToken = None) -> SubmitResult:
    """Start a sweep: one ledger experiment per run, then a controller job: the canary first, the rest (at
    most max_concurrent at once) once it logged clean steps; diverging runs stopped, only infrastructure
    failures retried. A paid sweep needs the human's yes and must fit the budgets. Follow with sweep_status."""
    if resume:
        return resume_sweep(resume)
    if planned.error:
        raise planned.error
    result = submit_sweep(_source(spec_path, spec), consent=consent_from(approval, approval_token, ctx),
                          arguments={"spec_path": spec_path, "spec": spec}, built=planned.built)
    if result.plan is not None:
        result.plan = _fit_plan(result.plan)
    return result


@guarded
def sweep_status(sweep_id: SweepId) -> SweepStatusView:
    """One row per run (state, step, last loss, selection metric, cost so far; remote runs from the metric
    lines in their job logs), the canary, alerts, and whether the controller is alive (a crashed one is
    named, with how to resume)."""
    from ..sweeps import sweep_status as status

    return _fit_rows(status(sweep_id), "rows", "next_step")


@guarded
def sweep_select(sweep_id: SweepId,
                 metric: Annotated[str | None, Field(description="Rank on this metric instead of the spec's "
                                                                 "(eval/humaneval/pass@1, eval_loss, any "
                                                                 "logged metric).")] = None,
                 direction: Annotated[Literal["min", "max"] | None, Field(description="Better is lower (min) "
                                                                                      "or higher (max).")] = None,
                 reduce: Annotated[Literal["last", "best"] | None, Field(description="A logged metric's last "
                                                                                     "value or its best.")] = None,
                 record: Annotated[bool, Field(description="Write keep/discard/crash to the ledger (once "
                                                           "every run finished).")] = True) -> Selection:
    """Rank the finished runs, name the best run and its adapter (registry name + version), and write
    keep / discard / crash to the ledger. Publishing the best adapter is registry_publish (approved)."""
    return _fit_rows(select_sweep(sweep_id, metric=metric, direction=direction, reduce=reduce, record=record),
                     "ranking", "next_step")


@guarded
def sweep_report(sweep_id: SweepId) -> Annotated[CallToolResult, SweepReport]:
    """The sweep's report: a markdown table (one row per run, best first) and a PNG of the runs' curves,
    saved in the sweep folder and returned here."""
    from ..sweeps.report import write_report
    from ..sweeps.state import read_state, sweep_dir

    folder = sweep_dir(sweep_id)
    paths = write_report(folder, read_state(folder))
    markdown = Path(paths["markdown_path"]).read_text(encoding="utf-8")
    report = SweepReport(sweep_id=sweep_id, markdown=markdown, **paths)
    content: list = [TextContent(type="text", text=markdown)]
    if paths["png_path"]:
        data = base64.b64encode(Path(paths["png_path"]).read_bytes()).decode()
        content.append(ImageContent(type="image", data=data, mime_type="image/png"))
    return CallToolResult(content=content, structured_content=report.model_dump(mode="json"))


@guarded
def sweep_cancel(sweep_id: SweepId) -> SweepStatusView:
    """Cancel a sweep: stop its controller, cancel its running jobs, record the runs that never finished
    as crash in the ledger."""
    from ..sweeps import sweep_status as status

    cancel_sweep(sweep_id)
    return _fit_rows(status(sweep_id), "rows", "next_step")



TOOLS = [sweep_plan, sweep_submit, sweep_status, sweep_select, sweep_report, sweep_cancel]
