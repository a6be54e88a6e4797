"""MCP tool over agent traces: convert harness session files into SFT rows (mcp_server.traces)."""

from typing import Annotated, Literal

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


def register(server) -> None:
    @server.tool()
    @guarded
    def traces_convert(
        paths: Annotated[list[str], Field(description="Session files or folders: ~/.pi/agent/sessions, "
                                                      "~/.claude/projects/<project>, ~/.codex/sessions, "
                                                      "~/.local/share/opencode/storage (or opencode.db), "
                                                      "OpenAI/ShareGPT chat .json/.jsonl, or a Hub repo of raw "
                                                      "sessions as hf://datasets/NS/NAME[@REV].", min_length=1)],
        output: Annotated[str, Field(description="Dataset to write: a .jsonl or .parquet path.")],
        format: Annotated[Literal["auto", "pi", "claude-code", "codex", "opencode", "openai"],
                          Field(description="Session format; auto detects it per file / folder.")] = "auto",
        thinking: Annotated[Literal["keep", "drop"], Field(description="keep = reasoning_content on assistant "
                                                                       "messages; drop = removed.")] = "keep",
        rows: Annotated[Literal["conversation", "turn", "window"],
                        Field(description="conversation = messages rows; turn = one prompt/completion row per "
                                          "assistant turn; window = prompt/completion rows of at most max_length "
                                          "tokens cut at turn boundaries (needs tokenizer).")] = "conversation",
        max_length: Annotated[int | None, Field(description="Window length in tokens (rows=window).", ge=64)] = None,
        model: Annotated[str | None, Field(description="Only turns of models whose id contains this.")] = None,
        min_assistant_turns: Annotated[int, Field(description="Drop shorter conversations.", ge=1)] = 1,
        max_tokens: Annotated[int | None, Field(description="Drop longer rows (needs tokenizer).", ge=1)] = None,
        tokenizer: Annotated[str | None, Field(description="Local tokenizer folder for token counts.")] = None,
        drop_harness_context: Annotated[bool, Field(description="Drop harness-injected context (Codex environment, "
                                                                "AGENTS.md, system prompt; Claude "
                                                                "<system-reminder>).")] = False,
        template: Annotated[str | None, Field(description="Shape rows for a training template: TRL's qwen3, "
                                                          "qwen2_5, gptoss, deepseekv3; tunepack's gemma4, "
                                                          "gemma4_v2..v5, llama3_1, llama3_2 (gemma3/llama3/phi3 "
                                                          "only with rows=turn).")] = None,
    ) -> TraceStats:
        """Convert coding-agent sessions (Pi, Claude Code, Codex, OpenCode, OpenAI chat/ShareGPT) into TRL SFT
        rows with tool calls, tool results and a tools column; redacts secrets, drops failed turns and unpaired
        tool calls, and writes the dataset atomically with a stats report. Train on it with data.path set to the
        output, or point data.path at the sessions with data.format: traces."""
        opts = ConvertOptions(format=format, thinking=thinking, rows=rows, model=model,
                              min_assistant_turns=min_assistant_turns, max_tokens=max_tokens, tokenizer=tokenizer,
                              drop_harness_context=drop_harness_context, template=template, max_length=max_length)
        return TraceStats(**convert(paths, output, opts).short())
