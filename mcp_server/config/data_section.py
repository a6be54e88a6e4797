"""The data a run reads: its files or Hub dataset, how agent sessions are converted (traces), the held-out split,
and what is done with rows longer than training.max_length."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .section import Section

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
DataFormat = Literal["auto", "messages", "prompt_completion", "traces", "prompts", "preference"]


class TracesSection(Section):
    """How raw agent sessions (data.format: traces) become chat rows; see `tunepack traces convert`."""

    format: Literal["auto", "pi", "claude-code", "codex", "opencode", "openai"] = Field(
        "auto", description="Session format of data.path; auto = detect per file / folder.")
    thinking: Literal["keep", "drop"] = Field(
        "keep", description="keep = reasoning in the assistant message's reasoning_content; drop = removed.")
    rows: Literal["conversation", "turn"] = Field(
        "conversation", description="conversation = messages rows; turn = one prompt/completion row per "
        "assistant turn.")
    model: str | None = Field(None, description="Only turns of models whose id contains this text.")
    min_assistant_turns: int = Field(1, ge=1, description="Drop conversations with fewer assistant turns.")
    drop_harness_context: bool = Field(
        False, description="Drop harness-injected context (Codex environment/AGENTS.md/developer messages and "
        "system prompt, Claude Code <system-reminder> blocks).")
    drop_failed_turns: bool = Field(True, description="Drop aborted and errored assistant turns.")
    windows: Literal["auto", "off"] | None = Field(
        None, description="Sets data.windows for the converted sessions (auto: sessions longer than "
        "training.max_length are split into windows that fit).")
    only_verified: bool = Field(False, description="data.path holds a GRPO run's rollouts (the coding environment's "
                                "rollouts/ folder): train only on those whose hidden tests all passed.")
    per_problem: int | None = Field(4, ge=1, description="With only_verified: rollouts kept per problem.")


class DataSection(Section):
    path: list[str] = Field(
        default_factory=list,
        description="Local .jsonl/.json/.parquet files or folders of them (one string or a list).",
    )
    hub_id: str | None = Field(None, description="A dataset repo on the Hub (namespace/name).")
    revision: str | None = Field(None, description="Hub dataset revision.")
    format: DataFormat = Field(
        "auto",
        description="messages = conversational rows (TRL 'messages' + optional 'tools'); "
        "prompt_completion = 'prompt'/'completion' rows; auto = detect from the columns; "
        "traces = raw agent sessions (Pi, Claude Code, Codex, OpenCode, OpenAI chat) in data.path, or the session "
        "files of a Hub dataset repo in data.hub_id (at data.revision), converted to chat rows on the host before "
        "training (options in data.traces); prompts = prompt-only rows {id, prompt[, tests, solution]} for "
        "training.method grpo (the model writes the completion, rewards score it); preference = {prompt, chosen, "
        "rejected[, tools]} rows of messages for training.method dpo (`tunepack dpo pairs` builds them).",
    )
    traces: TracesSection | None = Field(None, description="Conversion options for data.format: traces.")
    split: str = Field("train", description="Split to train on.")
    messages_column: str = Field("messages", description="Column holding the conversation.")
    tools_column: str = Field("tools", description="Column holding the tool JSON schemas.")
    eval_split: str | None = Field(None, description="A split to evaluate on during training.")
    eval_fraction: float | None = Field(
        None, gt=0, lt=0.5, description="Hold out this share of the sessions (or conversations) for evaluation: "
        "above 0 and below 0.5, whole sessions, at least one; when a few long sessions would take most of the model "
        "turns, sessions are taken instead while the held-out turns stay within this share.")
    eval_seed: int = Field(0, description="Seed of the held-out draw, on its own: runs of a sweep over "
                           "training.seed keep one held-out set.")
    eval_sessions: list[str] | None = Field(
        None, description="Hold out these sessions instead of a drawn share: session ids or session file names "
        "(preflight lists them).")
    allow_truncation: bool = Field(
        False,
        description="Allow rows whose trained tokens fall past training.max_length (they are cut "
        "or dropped by TRL). Off by default: the mask check fails instead.",
    )
    mask_check_rows: int = Field(
        256, ge=1, description="How many rows the mask check renders and verifies token by token."
    )
    windows: Literal["auto", "off"] = Field(
        "auto",
        description="auto = a conversation longer than training.max_length is split at turn boundaries into "
        "prompt/completion rows that fit (system prompt + first user message + as much preceding context as "
        "fits, then the next assistant turns); completion-only plus assistant-only loss train every assistant "
        "turn exactly once and never the repeated context. off = long rows fail the mask check (or are cut "
        "with allow_truncation).",
    )
    window_context: float = Field(
        0.5, gt=0, lt=1, description="At most this share of max_length repeats earlier turns as context in a window."
    )

    @field_validator("path", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_source(self) -> "DataSection":
        if bool(self.path) == bool(self.hub_id):
            raise ValueError(
                "data.path and data.hub_id: give exactly one source "
                "(local files/folders in data.path, or a Hub dataset id in data.hub_id)"
            )
        if self.hub_id and not HUB_ID.match(self.hub_id):
            raise ValueError(f"data.hub_id '{self.hub_id}' is not a repo id of the form namespace/name")
        if self.eval_split and not self.hub_id:
            raise ValueError(
                f"data.eval_split '{self.eval_split}' needs a Hub dataset (data.hub_id); "
                "for local files hold out rows with data.eval_fraction (e.g. 0.1) instead"
            )
        if self.format == "traces" and self.eval_split:
            raise ValueError("data.eval_split does not apply to raw agent sessions (data.format traces); hold out "
                             "converted rows with data.eval_fraction (e.g. 0.05) instead")
        if self.traces is not None and self.format != "traces":
            raise ValueError(f"data.traces is set but data.format is '{self.format}'; "
                             "set data.format: traces (or remove data.traces)")
        if self.eval_split and self.eval_fraction:
            raise ValueError(
                "data.eval_split and data.eval_fraction: set at most one "
                "(an existing split, or a fraction held out of the train split)"
            )
        if self.eval_sessions is not None and (self.eval_fraction or self.eval_split or not self.eval_sessions):
            raise ValueError("data.eval_sessions names the held-out sessions: give at least one name, and leave "
                             "data.eval_fraction and data.eval_split out")
        return self

    @property
    def held_out(self) -> bool:
        """Whether part of the training data is held out for evaluation (a drawn share or named sessions)."""
        return bool(self.eval_fraction or self.eval_sessions)
