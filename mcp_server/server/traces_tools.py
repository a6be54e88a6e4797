"""MCP tool over agent traces: convert harness session files into SFT rows (mcp_server.traces)."""

from typing import Annotated

from pydantic import BaseModel, Field

from ..traces import ConvertOptions, convert
from .common import guarded


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
                                                  "OpenAI/ShareGPT chat .json/.jsonl, or a Hub repo of raw "
                                                  "sessions as hf://datasets/NS/NAME[@REV].", min_length=1)],
    output: Annotated[str, Field(description="Dataset to write: a .jsonl or .parquet path.")],
    options: Annotated[ConvertOptions | None, Field(description="How to convert (the config's data.traces "
                                                                "section; default: every option's default).")]
    = None,
) -> TraceStats:
    """Convert coding-agent sessions (Pi, Claude Code, Codex, OpenCode, OpenAI chat/ShareGPT) into TRL SFT
    rows with tool calls, tool results and a tools column; redacts secrets, drops failed turns and unpaired
    tool calls (options say otherwise), and writes the dataset atomically with a stats report. Train on it with
    data.path set to the output, or point data.path at the sessions with data.format: traces."""
    return TraceStats(**convert(paths, output, options or ConvertOptions()).short())


TOOLS = [traces_convert]
