"""The shapes every reader produces and the options every step reads.

Readers turn a harness's session format into ``Conversation`` objects holding ``Msg`` objects in a
neutral shape (role, text, reasoning, tool calls with dict arguments, a status for failed turns);
``normalize`` turns those into TRL conversational messages. Keeping the neutral shape small is what
lets one normaliser enforce the training rules (pairing, alternation, dropping) for every format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..config.schema import untitled
from ..errors import TraceError
from ..evals.kit.shaping import DROPPER_TEMPLATES as DROPPER_TEMPLATES  # the shaping rules own the names
from ..evals.kit.shaping import KEEPER_TEMPLATES as KEEPER_TEMPLATES

FORMATS = ("pi", "claude-code", "codex", "opencode", "openai", "hermes", "droid")
SourceFormat = Literal["auto", "pi", "claude-code", "codex", "opencode", "openai", "hermes", "droid"]


class ConvertOptions(BaseModel):
    """What to convert and how. ``tunepack traces convert`` flags (``--drop-harness-context``, …) and the
    ``traces_convert`` tool's arguments set the common ones; ``data.traces`` in a config sets them for training."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=untitled)

    format: SourceFormat = Field("auto", description="Session format; auto = detect per file / folder.")
    thinking: Literal["keep", "drop"] = Field(
        "keep", description="keep = reasoning goes to the assistant message's reasoning_content; drop = removed.")
    rows: Literal["conversation", "turn", "window"] = Field(
        "conversation", description="conversation = one 'messages' row per conversation; turn = one "
        "prompt/completion row per assistant turn; window = prompt/completion rows that fit max_length, split "
        "at turn boundaries (every assistant turn trained once; needs tokenizer and max_length).")
    max_length: int | None = Field(None, ge=64, description="Window length in tokens (rows=window).")
    window_context: float = Field(0.5, gt=0, lt=1, description="At most this share of a window repeats earlier "
                                                                "turns as (untrained) context.")
    model: str | None = Field(None, description="Keep only turns produced by models whose id contains this "
                                                "(case-insensitive); conversation rows keep a conversation "
                                                "when any of its assistant turns matches.")
    min_assistant_turns: int = Field(1, ge=1, description="Drop conversations with fewer assistant turns.")
    max_tokens: int | None = Field(None, ge=1, description="Drop rows longer than this (needs tokenizer).")
    tokenizer: str | None = Field(None, description="A local tokenizer folder for token counts and max_tokens.")
    drop_harness_context: bool = Field(
        False, description="Drop what the harness injects: Codex environment/AGENTS.md/developer messages and "
        "system prompt, Claude Code <system-reminder> blocks.")
    drop_failed_turns: bool = Field(True, description="Drop aborted and errored assistant turns.")
    keep_dangling_tool_calls: bool = Field(
        False, description="Keep tool calls that never got a result (default: drop them and count them).")
    compacted: bool = Field(
        True, description="Also emit the turns a compaction summarised away, as their own conversation.")
    synthesize_tools: bool = Field(
        True, description="Infer tool JSON schemas from the observed calls when a format stores none.")
    only_verified: bool = Field(
        False, description="Keep only the rollouts of a GRPO run in the coding environment (its rollouts/ folder) "
        "whose hidden tests all passed: exact repeats of a problem's trajectory dropped, at most per_problem per "
        "problem (verified-rollout SFT, the ladder's last rung).")
    per_problem: int | None = Field(4, ge=1, description="With only_verified: rollouts kept per problem (the "
                                    "highest rewards, then the earliest steps); empty = all.")
    redact: bool = Field(True, description="Replace secrets (API keys, tokens, bearer headers) in all text.")
    template: str | None = Field(None, description="Shape rows for this training template (TRL's qwen3, qwen2_5, "
                                                   "gptoss, deepseekv3; tunepack's gemma4, gemma4_v2..v5, llama3_1, "
                                                   "llama3_2) and refuse templates that cannot carry tool calls.")

    def check(self) -> None:
        """Refuse options that need a tokenizer (or a window length) they were not given."""
        if self.max_tokens and not self.tokenizer:
            raise TraceError("--max-tokens needs a tokenizer to count tokens with.",
                             "add --tokenizer DIR (a local model or tokenizer folder), or drop --max-tokens.")
        if self.rows == "window" and not (self.tokenizer and self.max_length):
            raise TraceError("--rows window needs a tokenizer and a window length to cut sessions by tokens.",
                             "add --tokenizer DIR (the model's tokenizer folder) and --max-length N "
                             "(training.max_length); or keep conversation rows: the training script windows long "
                             "ones itself (data.windows: auto).")


def text_or_none(value) -> str | None:
    """Ids, names and types from untrusted files: strings (numbers become strings), anything else None."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def as_text(value) -> str:
    """Text fields from untrusted files: strings as they are, anything else empty."""
    return value if isinstance(value, str) else ""


@dataclass
class Call:
    """One tool call: arguments are always a dict (freeform input becomes {'input': text})."""

    id: str | None
    name: str
    arguments: dict
    partial: bool = False  # streaming leftover: the arguments may be incomplete

    def __post_init__(self) -> None:
        self.id = text_or_none(self.id)
        self.name = text_or_none(self.name) or "unknown"
        if not isinstance(self.arguments, dict):
            self.arguments = {} if self.arguments is None else {"input": self.arguments}


@dataclass
class Msg:
    role: str  # system | user | assistant | tool
    content: str = ""
    reasoning: str = ""
    calls: list[Call] = field(default_factory=list)
    call_id: str | None = None  # tool results: the call they answer
    name: str | None = None  # tool results: the tool's name
    status: str = "ok"  # assistant turns: ok | aborted | error
    model: str | None = None  # assistant turns: the model that produced it

    def __post_init__(self) -> None:
        self.content = self.content if isinstance(self.content, str) else ""
        self.reasoning = self.reasoning if isinstance(self.reasoning, str) else ""
        self.call_id, self.name, self.model = (text_or_none(v) for v in (self.call_id, self.name, self.model))


@dataclass
class Conversation:
    source: str  # the file or folder it came from
    format: str
    session: str  # the harness's session id (or the file name)
    part: str = "main"  # main | sidechain:<id> | segment:<n> | row:<n>
    messages: list[Msg] = field(default_factory=list)
    tools: list[dict] | None = None  # tool schemas the format stored, if any
    pairing: Literal["id", "position"] = "id"  # position: results pair with calls in order (ids repeat)

    @property
    def catalog_key(self) -> str:
        """Which tool catalog the conversation's tools belong to (one per format; OpenAI chat files: per file)."""
        return self.format if self.format != "openai" else f"openai:{self.source}"
