"""MCP tools over agent traces: convert harness session files into SFT rows, and push the user's own sessions
to a Hub dataset repo (mcp_server.traces)."""

from datetime import date
from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

from ..traces import ConvertOptions, convert
from ..traces.push import PushOptions, PushReport, push_sessions
from .common import Approval, ApprovalToken, can_elicit, consent_from, guarded


class TraceStats(BaseModel):
    output: str = Field(description="The dataset written (JSON Lines or Parquet).")
    stats_path: str = Field(description="The full stats report, per file.")
    row_format: str
    rows: int
    sessions: int
    conversations: int
    assistant_turns: int
    tool_calls: int
    tool_calls_by_name: dict[str, int] = Field(description="The 25 most called tools.")
    tokens: int
    token_counter: str
    formats: dict[str, int] = Field(description="Sources per detected format.")
    thinking: dict[str, int]
    problems: dict[str, int] = Field(description="Input problems (malformed lines, streaming leftovers, …).")
    dropped: dict[str, int] = Field(description="Dropped items by reason.")
    redactions: dict[str, int] = Field(description="Secrets replaced, by kind.")
    notes: list[str]
    files: int
    files_with_issues: list[dict] = Field(description="Up to 20 files with problems or drops.")
    source: dict | None = Field(None, description="Sessions from a Hub repo: hub_id, revision, commit, file hashes.")
    windows: dict | None = Field(None, description="rows=window: turns trained / dropped by reason, windows, and "
                                                   "the compute multiplier.")


@guarded
def traces_convert(
    paths: Annotated[list[str], Field(description="Session files or folders: ~/.pi/agent/sessions, "
                                                  "~/.claude/projects/<project>, ~/.codex/sessions, "
                                                  "~/.local/share/opencode/storage (or opencode.db), "
                                                  "~/.factory/sessions, ~/.hermes/sessions, "
                                                  "OpenAI/ShareGPT chat .json/.jsonl, or a Hub repo of raw "
                                                  "sessions as hf://datasets/NS/NAME[@REV].", min_length=1)],
    output: Annotated[str, Field(description="Dataset to write: a .jsonl or .parquet path.")],
    options: Annotated[ConvertOptions | None, Field(description="How to convert (the config's data.traces "
                                                                "section; default: every option's default).")]
    = None,
) -> TraceStats:
    """Convert coding-agent sessions (Pi, Claude Code, Codex, OpenCode, Hermes, Droid, OpenAI chat/ShareGPT) into TRL SFT
    rows with tool calls, tool results and a tools column; redacts secrets, drops failed turns and unpaired
    tool calls (options say otherwise), and writes the dataset atomically with a stats report. Train on it with
    data.path set to the output, or point data.path at the sessions with data.format: traces."""
    return TraceStats(**convert(paths, output, options or ConvertOptions()).short())


def ask_to_push_public(ctx: Context, repo: str, public: bool = False, dry_run: bool = False):
    """Resolver: pushing sessions to a PUBLIC repo — ask the human when the client can; None = nobody was asked."""
    if not public or dry_run or not can_elicit(ctx):
        return None
    return Elicit(f"tunepack wants to push your agent sessions (redacted) to the PUBLIC dataset repo {repo}, where "
                  "anyone can read them. Approve?", Approval)


@guarded
def traces_push(
    ctx: Context,
    repo: Annotated[str, Field(description="Hub dataset repo, namespace/name (created private).")],
    approval: Annotated[ElicitationResult[Approval], Resolve(ask_to_push_public)],
    paths: Annotated[list[str] | None, Field(description="Session files or folders; empty = the harnesses' own "
                                                         "folders (~/.pi/agent/sessions, ~/.claude/projects, "
                                                         "~/.codex/sessions and archived_sessions, OpenCode's "
                                                         "storage, ~/.factory/sessions, ~/.hermes/sessions).")] = None,
    public: Annotated[bool, Field(description="Public repo: needs the human's approval. Default private.")] = False,
    project: Annotated[str | None, Field(description="Only sessions run in this folder or below.")] = None,
    since: Annotated[date | None, Field(description="Only sessions started on or after this day (YYYY-MM-DD).")]
    = None,
    until: Annotated[date | None, Field(description="Only sessions started on or before this day.")] = None,
    dry_run: Annotated[bool, Field(description="List what would go and the redaction report; upload nothing.")]
    = False,
    approval_token: ApprovalToken = None,
) -> PushReport:
    """Push the user's own coding-agent sessions (Pi, Claude Code, Codex, OpenCode, Factory Droid, Hermes) raw, in
    per-harness folders, to a Hub dataset repo the Hub's trace viewer shows and data.hub_id + data.format: traces
    trains on. Secrets are redacted before upload (report by kind); only sessions new or grown since the last push
    go. Private by default; a public repo needs the human's yes."""
    options = PushOptions(public=public, project=project, since=since, until=until, dry_run=dry_run)
    return push_sessions(paths or None, repo, options, consent_from(approval, approval_token, ctx))


TOOLS = [traces_convert, traces_push]
