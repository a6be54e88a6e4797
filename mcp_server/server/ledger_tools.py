"""MCP tools over the experiment ledger (mcp_server.ledger): propose, claim, record, list, report.

Every answer carries the plateau verdict (``should_stop`` + reason), so a planner or the main agent
sees when to stop proposing without asking for it.
"""

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from ..ledger import Experiment, Ledger, LedgerError, Plateau, export_tsv, report_markdown
from .common import guarded

LedgerProject = Annotated[str, Field(description="Ledger project: one research question or sweep "
                                                 "(e.g. 'qwen3-0.6b-agent-sft').")]
ExperimentId = Annotated[int, Field(description="Experiment id (ledger_list shows them).", ge=1)]
PlateauK = Annotated[int, Field(description="Stop after this many finished experiments without improvement.",
                                ge=1, le=50)]
DirectionArg = Annotated[Literal["max", "min"] | None, Field(description="Is a higher ('max') or lower ('min') "
                                                                         "metric better? Default: min for losses, "
                                                                         "error rates and perplexity, else max.")]


class LedgerAnswer(BaseModel):
    experiment: Experiment | None
    detail: str
    plateau: Plateau


class LedgerList(BaseModel):
    project: str
    counts: dict[str, int]
    metric: str | None
    best: Experiment | None
    plateau: Plateau
    experiments: list[Experiment] = Field(description="Oldest first (the newest `limit`).")
    do_not_repeat: list[str] = Field(description="Changes never to propose again: 'variable = value (#id)'.")


class LedgerReport(BaseModel):
    format: str
    text: str
    path: str | None
    plateau: Plateau


@guarded
def ledger_propose(project: LedgerProject,
                   hypothesis: Annotated[str, Field(description="What you expect and why (one or two "
                                                                "sentences).")],
                   variable: Annotated[str, Field(description="The ONE config key this experiment changes, e.g. "
                                                              "training.learning_rate.")],
                   value: Annotated[str | int | float | bool | None, Field(description="Its new value.")] = None,
                   parent: Annotated[int | None, Field(description="The experiment this one changes (empty for "
                                                                   "a baseline).", ge=1)] = None,
                   expected: Annotated[str | None, Field(description="The expected effect, e.g. 'eval_loss "
                                                                     "-0.05'.")] = None,
                   config: Annotated[dict | None, Field(description="The full resulting config (its hash "
                                                                    "detects repeats).")] = None,
                   k: PlateauK = 3) -> LedgerAnswer:
    """Propose one experiment (planner): one changed variable against a parent, with a hypothesis and the
    expected effect. Refused when it repeats a recorded experiment or a do-not-repeat failure."""
    ledger = Ledger(project)
    e = ledger.propose(hypothesis, variable, value, parent=parent, expected=expected, config=config)
    verdict = ledger.plateau(k)
    detail = f"proposed #{e.id}: {e.variable} = {e.value}; a worker takes it with ledger_claim"
    if verdict.should_stop:
        detail += " — but the plateau rule says stop: " + verdict.reason
    return LedgerAnswer(experiment=e, detail=detail, plateau=verdict)


@guarded
def ledger_claim(project: LedgerProject,
                 worker: Annotated[str, Field(description="Your worker name (unique per worker).")],
                 experiment_id: Annotated[int | None, Field(description="Take this experiment; empty = the "
                                                                        "oldest proposed.", ge=1)] = None,
                 k: PlateauK = 3) -> LedgerAnswer:
    """Claim one proposed experiment for a worker, atomically (two workers never get the same one); it becomes
    running. Then preflight, run it, and record the outcome with ledger_record."""
    ledger = Ledger(project)
    e = ledger.claim(worker, experiment_id)
    verdict = ledger.plateau(k)
    detail = (f"claimed #{e.id} for {worker}: change {e.variable} to {e.value} (parent "
              f"{'#' + str(e.parent) if e.parent else 'none: baseline'}); preflight first, then run and "
              "record with ledger_record" if e else "nothing to claim: no proposed experiment is left")
    return LedgerAnswer(experiment=e, detail=detail, plateau=verdict)


@guarded
def ledger_record(project: LedgerProject, experiment_id: ExperimentId,
                  status: Annotated[Literal["running", "keep", "discard", "crash"],
                                    Field(description="running (attach the job id) | keep (better than the "
                                                      "best) | discard (not better) | crash (failed).")],
                  metric_name: Annotated[str | None, Field(description="The project's ranking metric, e.g. "
                                                                       "eval/humaneval/pass@1 or eval_loss.")]
                  = None,
                  metric_value: Annotated[float | None, Field(description="Its value for this experiment.")]
                  = None,
                  job_id: Annotated[str | None, Field(description="The training/eval job id.")] = None,
                  note: Annotated[str | None, Field(description="What happened (notes accumulate).")] = None,
                  do_not_repeat: Annotated[bool | None, Field(description="Never propose this change again "
                                                                          "(default: yes for discard).")] = None,
                  k: PlateauK = 3, direction: DirectionArg = None) -> LedgerAnswer:
    """Record a claimed experiment's job id or outcome (worker), or re-classify a finished one (reviewer).
    keep needs the metric. Returns the plateau verdict: should_stop says whether to stop proposing."""
    ledger = Ledger(project)
    e = ledger.record(experiment_id, status, metric_value=metric_value, metric_name=metric_name, job_id=job_id,
                      note=note, do_not_repeat=do_not_repeat)
    verdict = ledger.plateau(k, direction)
    return LedgerAnswer(experiment=e, detail=f"#{e.id} is {e.status}; {verdict.reason}", plateau=verdict)


@guarded
def ledger_list(project: LedgerProject,
                status: Annotated[Literal["proposed", "running", "keep", "discard", "crash"] | None,
                                  Field(description="Only this status.")] = None,
                variable: Annotated[str | None, Field(description="Only experiments changing this key.")] = None,
                limit: Annotated[int, Field(description="At most this many (the newest).", ge=1, le=100)] = 30,
                k: PlateauK = 3, direction: DirectionArg = None) -> LedgerList:
    """The project's experiments with counts, the best one, the do-not-repeat list and the plateau verdict —
    read it before proposing (never repeat a recorded failure)."""
    ledger = Ledger(project)
    blocked = [f"{e.variable} = {e.value} (#{e.id}, {e.status})" for e in ledger.blocked()]
    return LedgerList(project=project, counts=ledger.counts(), metric=ledger.metric(),
                      best=ledger.best(direction=direction), plateau=ledger.plateau(k, direction),
                      experiments=ledger.list(status=status, variable=variable, limit=limit),
                      do_not_repeat=blocked[-40:])


@guarded
def ledger_report(project: LedgerProject,
                  format: Annotated[Literal["markdown", "tsv"], Field(description="markdown (for people) or tsv "
                                                                                  "(one row per experiment).")]
                  = "markdown",
                  path: Annotated[str | None, Field(description="Also write it to this file.")] = None,
                  k: PlateauK = 3, direction: DirectionArg = None) -> LedgerReport:
    """The ledger as a markdown report (summary, stop verdict, best, every experiment, do-not-repeat) or a TSV."""
    ledger = Ledger(project)
    text = report_markdown(ledger, k, direction) if format == "markdown" else export_tsv(ledger)
    if path:
        try:
            Path(path).expanduser().write_text(text, encoding="utf-8")
        except OSError as exc:
            raise LedgerError(f"Cannot write {path}: {exc.strerror}.", "pass a writable file path.") from None
    cut = text if len(text) <= 6000 else text[:6000] + f"\n… [cut; {len(text)} characters — pass path to get all]"
    return LedgerReport(format=format, text=cut, path=path, plateau=ledger.plateau(k, direction))


TOOLS = [ledger_propose, ledger_claim, ledger_record, ledger_list, ledger_report]
