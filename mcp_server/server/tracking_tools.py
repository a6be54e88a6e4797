"""MCP tools of the tracking room: Trackio runs — write your own, read, summarise, compare, plot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel, Field

from ..tracking import CompareRow, RunReport, TrackioStore, compare_runs, run_report, writer
from ..tracking.plot import curves_png
from .common import Project, guarded

RunName = Annotated[str, Field(description="Run name within the project.")]


class Done(BaseModel):
    ok: bool = True
    detail: str


class Names(BaseModel):
    names: list[str]


@guarded
def tracking_start(project: Project, run: RunName,
                   config: Annotated[dict | None, Field(description="Anything worth recording with the run.")] = None
                   ) -> Done:
    """Open a Trackio run for an evaluation or your own notes (training jobs track themselves)."""
    writer.start_run(project, run, config)
    return Done(detail=f"run '{run}' open in project '{project}'; log with tracking_log, close with tracking_finish")


@guarded
def tracking_log(project: Project, run: RunName,
                 metrics: Annotated[dict[str, float], Field(description="Metric name → value.")],
                 step: Annotated[int | None, Field(description="Step of these values.", ge=0)] = None) -> Done:
    """Log numbers to an open Trackio run."""
    writer.log(project, run, metrics, step)
    return Done(detail=f"logged {len(metrics)} metrics")


@guarded
def tracking_finish(project: Project, run: RunName) -> Done:
    """Close a Trackio run opened with tracking_start (flushes it to disk)."""
    writer.finish(project, run)
    return Done(detail=f"run '{run}' finished")


@guarded
def tracking_projects() -> Names:
    """Trackio projects on this machine."""
    return Names(names=TrackioStore().projects())


@guarded
def tracking_runs(project: Project) -> Names:
    """Runs of a Trackio project, oldest first."""
    return Names(names=TrackioStore().runs(project))


@guarded
def tracking_summary(project: Project, run: RunName,
                     metrics: Annotated[list[str] | None, Field(description="Only these metrics (default all).")]
                     = None) -> RunReport:
    """First/last/min/max and recent trend per metric, with NaN, divergence and plateau flags."""
    return run_report(TrackioStore(), project, run, metrics)


@guarded
def tracking_compare(project: Project,
                     runs: Annotated[list[str], Field(description="Runs to compare.", min_length=1)],
                     metric: Annotated[str, Field(description="e.g. loss, eval_loss, mean_token_accuracy")]
                     ) -> list[CompareRow]:
    """Rank runs on one metric, best first (lowest for losses, highest otherwise)."""
    return compare_runs(TrackioStore(), project, runs, metric)


@guarded
def tracking_plot(project: Project,
                  runs: Annotated[list[str], Field(description="Up to 8 runs.", min_length=1)],
                  metrics: Annotated[Sequence[str], Field(description="Up to 4 metrics.")] = ("loss",)) -> Image:
    """A PNG of metric curves, one panel per metric, one line per run."""
    return Image(data=curves_png(TrackioStore(), project, runs, list(metrics)), format="png")


TOOLS = [tracking_start, tracking_log, tracking_finish, tracking_projects, tracking_runs, tracking_summary,
         tracking_compare, tracking_plot]
