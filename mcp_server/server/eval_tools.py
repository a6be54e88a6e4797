"""MCP tools of the evals room: start an evaluation as a job; read the results of a past one."""

from __future__ import annotations

from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve
from pydantic import BaseModel, Field

from ..config.eval_section import EvalSection
from ..evals.ladder import LadderTable
from ..jobs import get_backend
from .common import Approval, ApprovalToken, Flavor, OptBackend, TimeoutS, consent_from, guarded
from .pipeline_tools import Placed, SpendResult, ask_to_spend, spend_result

Name = Annotated[str, Field(description="Registry name of the adapter line (registry_list shows them).")]
Version = Annotated[int | None, Field(description="Registry version (default the newest).", ge=1)]


def _placed(backend: str | None = None, flavor: str | None = None, timeout_s: int | None = None) -> Placed:
    return Placed(None, backend or "local", flavor, timeout_s)


def ask_to_spend_on_eval(ctx: Context, placed: Annotated[Placed, Resolve(_placed)]):
    """The spend question of pipeline_run, for a tool without a config: the job's placement is in the call."""
    return ask_to_spend(ctx, placed)


EvalApproval = Annotated[ElicitationResult[Approval], Resolve(ask_to_spend_on_eval)]


class EvalTask(BaseModel):
    task: str
    metric: str
    n: int
    scores: dict[str, float | None] = Field(description="pass@1 by model: base, adapter (None = withheld).")
    status: dict[str, str] = Field(description="scored | withheld | contaminated, by model.")
    contaminated_share: float | None = Field(None, description="Share of the evaluated problems found in the "
                                                               "training data (None = not checked).")


class EvalSummary(BaseModel):
    registry_name: str | None = None
    registry_version: int | None = None
    sandbox: str | None = None
    table: str = Field(description="The markdown table written into the model card.")
    tasks: list[EvalTask]
    results_path: str | None = None
    card_path: str | None = None
    partial: bool = Field(False, description="The eval stopped before every task finished: these are the ones that did.")
    missing: list[str] = Field(default_factory=list, description="Tasks with no result (the eval stopped first).")
    error: str | None = Field(None, description="Why the eval stopped early, when it did.")
    hub_card: list[dict] | None = None  # the Hub repos whose card got the table: {repo_id, commit or error}
    next_step: str = ""


def _next_step(summary: dict) -> str:
    unsent = [h for h in summary.get("hub_card") or [] if "error" in h]
    if unsent:
        return (f"the eval is recorded here, but the Hub card of {unsent[0]['repo_id']} did not get it "
                f"({unsent[0]['error']}): registry_publish of this version to that repo sends it again")
    if summary.get("partial"):
        return (f"the eval stopped before {', '.join(summary['missing'])}; the finished tasks are recorded: "
                "start those tasks again with eval_start (a smaller eval.limit, or a longer timeout_s)")
    statuses = {s for t in summary["tasks"] for s in t["status"].values()}
    if "withheld" in statuses:
        return ("the adapter's training data overlaps the eval problems: drop those rows and retrain, or call "
                "eval_start again with allow_contaminated=true to see a labelled score")
    from ..evals.results import compare_to_base

    better, not_better = compare_to_base(summary)
    if not_better and not better:
        return (f"the adapter does not beat the base ({'; '.join(not_better)}): tell the user so, and do not "
                "publish it as an improvement")
    if not_better:
        return (f"the adapter beats the base on {'; '.join(better)} but not on {'; '.join(not_better)}: report "
                "both; publish with registry_publish only if the user agrees")
    return "report the table to the user; publish with registry_publish when they agree"




@guarded
def eval_start(ctx: Context, name: Name, approval: EvalApproval, version: Version = None,
               eval: Annotated[EvalSection | None, Field(description="What to evaluate and how: the config's eval "
                                                                    "section (default: tasks [humaneval]).")] = None,
               backend: OptBackend = None, flavor: Flavor = None, timeout_s: TimeoutS = None,
               project: Annotated[str | None, Field(description="Trackio project and budget (default: "
                                                                "the adapter's).")] = None,
               approval_token: ApprovalToken = None) -> SpendResult:
    """Evaluate a registry version (base vs base + adapter) on eval.tasks, code in a sandbox, after a contamination
    check; refused when its expected time passes timeout_s. Returns the job id; paid flavors need a yes."""
    from ..evals.service import start_eval

    started = start_eval(name, version, ev=eval or EvalSection(tasks=["humaneval"]),
                         backend=get_backend(backend or "local"), flavor=flavor, timeout_s=timeout_s,
                         project=project, consent=consent_from(approval, approval_token, ctx))
    return spend_result(started.spend, run_name=started.eval_id, next_step=started.next_step)


@guarded
def eval_results(job_id: Annotated[str | None, Field(description="An eval job id (from eval_start).")] = None,
                 name: Annotated[str | None, Field(description="Or a registry name: its latest recorded "
                                                               "results.")] = None,
                 version: Version = None) -> EvalSummary:
    """Results of a finished eval job, or the latest eval recorded with a registry version: the markdown
    table, pass@1 of base and base + adapter per task, and the contaminated share."""
    from ..evals.service import eval_results as read

    summary = read(job_id=job_id, name=name, version=version)
    return EvalSummary(**{k: v for k, v in summary.items() if k in EvalSummary.model_fields},
                       next_step=_next_step(summary))


@guarded
def eval_ladder(name: Annotated[str, Field(description="Registry name of the ladder's last rung (its lineage gives "
                                                        "the earlier ones).")],
                version: Version = None,
                tasks: Annotated[list[str] | None, Field(description="The columns (default: every task any rung "
                                                                     "was evaluated on).")] = None,
                readme_path: Annotated[str | None, Field(description="Also write the table into this markdown "
                                                                     "file's ladder section (replaced in place).")]
                = None) -> LadderTable:
    """The ladder's results table: base and every rung of an adapter's lineage (SFT → distilled → GRPO →
    environment GRPO → verified-rollout SFT) on the same benchmarks, one row a rung, from each version's latest
    eval. ``missing`` lists the eval_start calls that fill empty cells."""
    from ..evals.ladder import ladder_table, write_section

    table = ladder_table(name, version, tasks)
    if readme_path:
        write_section(readme_path, table.markdown)
    return table


TOOLS = [eval_start, eval_results, eval_ladder]
