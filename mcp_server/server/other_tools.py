"""MCP tools over tracking, the registry, skills and data inspection."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

from typing import Any

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel, Field

from ..approval import Decision, decide
from ..registry.hub import HubPush, publish

from ..errors import DataError, RegistryError
from ..jobs import get_backend
from ..registry import AdapterVersion, LocalRegistry, read_manifest, render_card
from ..skills import PitfallResult, SkillInfo, add_pitfall, list_skills, read_skill
from ..tracking import CompareRow, RunReport, TrackioStore, compare_runs, run_report
from ..tracking import writer
from ..tracking.plot import curves_png
from ..viewer import DatasetReport, inspect_dataset
from .common import Approval, ApprovalToken, ConfigPath, Project, elicited, guarded

PREVIEW_TIMEOUT_S = 18


class Done(BaseModel):
    ok: bool = True
    detail: str


class Names(BaseModel):
    names: list[str]


class MaskPreview(BaseModel):
    row: int
    chat_template: str
    tokens: int
    trained_tokens: int
    max_length: int
    fits_max_length: bool
    problems: list[str]
    preview: str
    legend: str


RunName = Annotated[str, Field(description="Run name within the project.")]


class PublishResult(BaseModel):
    status: str = Field(description="published | approval_required")
    decision: Decision
    push: HubPush | None = None
    next_step: str


def _ask_publish(ctx: Context, repo_id: str, private: bool = True, approval_token: str | None = None) -> Any:
    """Resolver: a public repo is publishing — ask the human when the client can."""
    if private or approval_token:
        return "not-needed" if private else "token"
    caps = ctx.client_capabilities
    if caps is None or caps.elicitation is None:
        return "no-elicitation"
    return Elicit(f"tunepack wants to publish an adapter as the PUBLIC repo {repo_id}. Approve?", Approval)


def register(server) -> None:
    # --- tracking ---------------------------------------------------------------------------

    @server.tool()
    @guarded
    def tracking_start(project: Project, run: RunName,
                       config: Annotated[dict | None, Field(description="Anything worth recording with the run.")] = None
                       ) -> Done:
        """Open a Trackio run for an evaluation or your own notes (training jobs track themselves)."""
        writer.start_run(project, run, config)
        return Done(detail=f"run '{run}' open in project '{project}'; log with tracking_log, close with tracking_finish")

    @server.tool()
    @guarded
    def tracking_log(project: Project, run: RunName,
                     metrics: Annotated[dict[str, float], Field(description="Metric name → value.")],
                     step: Annotated[int | None, Field(description="Step of these values.", ge=0)] = None) -> Done:
        """Log numbers to an open Trackio run."""
        writer.log(project, run, metrics, step)
        return Done(detail=f"logged {len(metrics)} metrics")

    @server.tool()
    @guarded
    def tracking_finish(project: Project, run: RunName) -> Done:
        """Close a Trackio run opened with tracking_start (flushes it to disk)."""
        writer.finish(project, run)
        return Done(detail=f"run '{run}' finished")

    @server.tool()
    @guarded
    def tracking_projects() -> Names:
        """Trackio projects on this machine."""
        return Names(names=TrackioStore().projects())

    @server.tool()
    @guarded
    def tracking_runs(project: Project) -> Names:
        """Runs of a Trackio project, oldest first."""
        return Names(names=TrackioStore().runs(project))

    @server.tool()
    @guarded
    def tracking_summary(project: Project, run: RunName,
                         metrics: Annotated[list[str] | None, Field(description="Only these metrics (default all).")]
                         = None) -> RunReport:
        """First/last/min/max and recent trend per metric, with NaN, divergence and plateau flags."""
        return run_report(TrackioStore(), project, run, metrics)

    @server.tool()
    @guarded
    def tracking_compare(project: Project,
                         runs: Annotated[list[str], Field(description="Runs to compare.", min_length=1)],
                         metric: Annotated[str, Field(description="e.g. loss, eval_loss, mean_token_accuracy")]
                         ) -> list[CompareRow]:
        """Rank runs on one metric, best first (lowest for losses, highest otherwise)."""
        return compare_runs(TrackioStore(), project, runs, metric)

    @server.tool()
    @guarded
    def tracking_plot(project: Project,
                      runs: Annotated[list[str], Field(description="Up to 8 runs.", min_length=1)],
                      metrics: Annotated[list[str], Field(description="Up to 4 metrics.")] = ["loss"]) -> Image:
        """A PNG of metric curves, one panel per metric, one line per run."""
        return Image(data=curves_png(TrackioStore(), project, runs, metrics), format="png")

    # --- registry ---------------------------------------------------------------------------

    @server.tool()
    @guarded
    def registry_push(adapter_dir: Annotated[str, Field(description="Folder with adapter_config.json and "
                                                                    "adapter_model.safetensors.")],
                      name: Annotated[str, Field(description="Registry name of the adapter line.")]) -> AdapterVersion:
        """Copy an adapter into the local registry as a new version (never overwrites); writes its model card
        when the folder holds a tunepack manifest."""
        card = None
        if (Path(adapter_dir) / "tunepack_manifest.json").is_file():
            manifest = read_manifest(adapter_dir)
            tracking = manifest.get("trackio", {})
            try:
                summary = TrackioStore(tracking.get("dir")).summary(tracking["project"], tracking["run"])
            except Exception:
                summary = None
            card = lambda version: render_card(manifest, summary, name=name, version=version)  # noqa: E731
        return LocalRegistry().push(adapter_dir, name, card=card)

    @server.tool()
    @guarded
    def registry_list(name: Annotated[str | None, Field(description="Only this adapter line.")] = None
                      ) -> list[AdapterVersion]:
        """Adapter versions in the local registry (the 15 newest; name an adapter line to narrow it)."""
        versions = LocalRegistry().list(name)
        if name and not versions:
            raise RegistryError(f"The registry has no adapter named '{name}'.", "call registry_list without a name.")
        return sorted(versions, key=lambda v: v.created_at)[-15:]

    @server.tool()
    @guarded
    def registry_publish(name: Annotated[str, Field(description="Registry name of the adapter line.")],
                         repo_id: Annotated[str, Field(description="Hub model repo, namespace/name.")],
                         approval: Annotated[ElicitationResult[Approval], Resolve(_ask_publish)],
                         version: Annotated[int | None, Field(description="Version (default the newest).", ge=1)]
                         = None,
                         private: Annotated[bool, Field(description="Private repo (default). Public needs human "
                                                                    "approval.")] = True,
                         approval_token: ApprovalToken = None) -> PublishResult:
        """Push a registry version to the Hugging Face Hub: adapter, manifest and a model card with model-index.
        Re-publishing the same version to the same repo returns the same commit."""
        entry = LocalRegistry().get(name, version)
        arguments = {"name": name, "repo_id": repo_id, "version": entry.version, "private": private}
        decision = decide("registry_publish", arguments, cost_usd=0.0, needs_approval=not private,
                          summary=f"publish {name} v{entry.version} as the public repo {repo_id}",
                          elicited=elicited(approval) if not private else None, approval_token=approval_token)
        if decision.status == "approval_required":
            return PublishResult(status="approval_required", decision=decision, next_step=decision.message)
        pushed = publish(entry, repo_id, private=private)
        return PublishResult(status="published", decision=decision, push=pushed,
                             next_step=f"the adapter is at {pushed.url} (commit {pushed.commit[:12]})")

    # --- skills -----------------------------------------------------------------------------

    @server.tool()
    @guarded
    def skills_list() -> list[SkillInfo]:
        """The skills (how-to guides for each pipeline step) with their versions and files."""
        return list_skills()

    @server.tool()
    @guarded
    def skills_read(name: Annotated[str, Field(description="Skill name from skills_list.")],
                    file: Annotated[str | None, Field(description="A file of the skill (default SKILL.md).")] = None
                    ) -> str:
        """Read a skill's SKILL.md (or one of its reference files)."""
        return read_skill(name, file)

    @server.tool()
    @guarded
    def skills_add_pitfall(skill: Annotated[str, Field(description="Skill the pitfall belongs to (skills_list).")],
                           symptom: Annotated[str, Field(description="What you saw, one line (8-200 chars).")],
                           cause: Annotated[str, Field(description="Why it happened (8-1000 chars).")],
                           fix: Annotated[str, Field(description="What to do instead (8-1000 chars).")],
                           evidence: Annotated[str, Field(description="A job id, log line or error message.")] = "",
                           source: Annotated[str, Field(description="Who found it (agent/harness name, run).")]
                           = "agent") -> PitfallResult:
        """Record a pitfall no skill warned about, so the next run does not repeat it. A near-duplicate returns
        the existing entry's id instead of adding a second. Secrets are redacted; the skill's patch version is
        bumped; the result says which files were written."""
        return add_pitfall(skill, symptom=symptom, cause=cause, fix=fix, evidence=evidence, source=source)

    # --- data -------------------------------------------------------------------------------

    @server.tool()
    @guarded
    def data_inspect(path: Annotated[str, Field(description="A .jsonl/.json/.parquet file or a folder of them, or a "
                                                "Hub repo of raw agent sessions as hf://datasets/NS/NAME[@REV] "
                                                "(downloaded and converted to chat rows).")],
                     messages_column: Annotated[str, Field(description="Column holding the conversations.")]
                     = "messages",
                     tools_column: Annotated[str, Field(description="Column holding tool schemas.")] = "tools"
                     ) -> DatasetReport:
        """Columns, row count, message roles, tool-call structure and problems of a local dataset."""
        return inspect_dataset([path], messages_column, tools_column)

    @server.tool()
    @guarded
    def data_mask_preview(config_path: ConfigPath,
                          row: Annotated[int, Field(description="Row index to preview.", ge=0)] = 0) -> MaskPreview:
        """Which tokens of one row SFT would train (⟦…⟧) under the config's tokenizer and chat template,
        and any mask problem."""
        python = os.environ.get("TUNEPACK_PYTHON") or get_backend("local").python or sys.executable
        try:
            done = subprocess.run([python, "-m", "mcp_server.train.preview", config_path, "--row", str(row)],
                                  capture_output=True, text=True, timeout=PREVIEW_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise DataError(f"The mask preview took longer than {PREVIEW_TIMEOUT_S} s (first use builds or downloads "
                            "the tokenizer).", "call it again (the tokenizer is cached now), or run "
                            f"`python -m mcp_server.train.preview {config_path} --row {row}`.") from None
        if done.returncode != 0 or not done.stdout.strip():
            tail = " ".join(done.stderr.strip().splitlines()[-3:])
            raise DataError(f"The mask preview failed: {tail}",
                            "install the training extra (pip install -e '.[train]') and check the config.")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        if "error" in result:
            raise DataError(result["error"]["problem"], result["error"]["fix"])
        return MaskPreview(**result)
