"""MCP tools of the evals room: start an evaluation as a job; read the results of a past one."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve
from pydantic import BaseModel, Field

from ..config.schema import EvalSection
from ..jobs import JobInfo, get_backend
from .common import Approval, ApprovalToken, Flavor, OptBackend, TimeoutS, guarded
from .pipeline_tools import SpendResult, _ask_spend, _spend

Name = Annotated[str, Field(description="Registry name of the adapter line (registry_list shows them).")]
Version = Annotated[int | None, Field(description="Registry version (default the newest).", ge=1)]


def _ask_eval_spend(ctx: Context, backend: str | None = None, flavor: str | None = None,
                    timeout_s: int | None = None, approval_token: str | None = None):
    """The spend resolver of pipeline_run, for a tool without a config: the job's placement is in the call."""
    return _ask_spend(ctx, None, backend or "local", flavor, timeout_s, approval_token)


EvalApproval = Annotated[ElicitationResult[Approval], Resolve(_ask_eval_spend)]


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
    sandbox: str
    table: str = Field(description="The markdown table written into the model card.")
    tasks: list[EvalTask]
    results_path: str | None = None
    card_path: str | None = None
    next_step: str = ""


def _next_step(summary: dict) -> str:
    statuses = {s for t in summary["tasks"] for s in t["status"].values()}
    if "withheld" in statuses:
        return ("the adapter's training data overlaps the eval problems: drop those rows and retrain, or call "
                "eval_start again with allow_contaminated=true to see a labelled score")
    return "report the table to the user; publish with registry_publish when they agree"


def register(server) -> None:
    @server.tool()
    @guarded
    def eval_start(name: Name, approval: EvalApproval, version: Version = None,
                   tasks: Annotated[list[str], Field(description="humaneval, mbpp, or paths of .jsonl problem "
                                                                 "files (id, prompt, tests).")] = ["humaneval"],
                   limit: Annotated[int | None, Field(description="First N problems per task (smoke runs).",
                                                      ge=1)] = None,
                   ids: Annotated[list[str] | None, Field(description="Only these problem ids (e.g. mbpp/89, "
                                                                      "HumanEval/0).")] = None,
                   samples: Annotated[int, Field(description="Answers per problem.", ge=1, le=100)] = 1,
                   temperature: Annotated[float, Field(description="0 = greedy.", ge=0, le=2)] = 0.0,
                   max_tokens: Annotated[int, Field(description="Most new tokens per answer.", ge=16)] = 512,
                   sandbox: Annotated[Literal["namespaces", "unsafe-host", "docker"],
                                      Field(description="Where generated code runs; unsafe-host = no isolation "
                                                        "(labelled).")] = "namespaces",
                   mbpp_source: Annotated[str, Field(description="'hub' or a path to mbpp.jsonl.")] = "hub",
                   allow_contaminated: Annotated[bool, Field(description="Show scores even when the training "
                                                                         "data overlaps the problems (labelled).")]
                   = False,
                   backend: OptBackend = None, flavor: Flavor = None, timeout_s: TimeoutS = None,
                   approval_token: ApprovalToken = None) -> SpendResult:
        """Evaluate a registry version (base model vs base + adapter) on code benchmarks with Inspect, generated
        code run in a sandbox, after a contamination check against its training data. Returns at once with the
        job id; results go into the version's model card. Paid flavors need human approval."""
        from ..evals.service import start_eval

        ev = EvalSection(tasks=tasks, limit=limit, ids=ids or [], samples=samples, temperature=temperature, max_tokens=max_tokens,
                         sandbox=sandbox, mbpp_source=mbpp_source, allow_contaminated=allow_contaminated)
        backend = backend or "local"
        arguments = {"name": name, "version": version, "tasks": tasks, "limit": limit, "backend": backend,
                     "flavor": flavor, "timeout_s": timeout_s, "allow_contaminated": allow_contaminated}
        started: list = []

        def submit() -> JobInfo:
            started.append(start_eval(name, version, ev=ev, backend=get_backend(backend), flavor=flavor,
                                      timeout_s=timeout_s))
            return started[0].job

        result = _spend("eval_start", arguments, backend, flavor, timeout_s, "tunepack-evals", submit, approval,
                        approval_token)
        if started:
            result.run_name = started[0].eval_id
            result.next_step = started[0].next_step
        return result

    @server.tool()
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
