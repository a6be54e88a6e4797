"""Response models shared by the local (DuckDB) viewer and the Datasets Viewer one."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Column(BaseModel):
    name: str
    type: str


class ConversationStats(BaseModel):
    rows_checked: int
    roles: dict[str, int] = Field(description="messages per role over the checked rows")
    messages_per_row: dict[str, float] = Field(description="min / mean / max")
    tool_calls: dict[str, int] = Field(description="tool calls per tool name")
    arguments_as_string: int = Field(description="tool calls whose arguments are a JSON string, not a dict")
    tool_results: int
    calls_without_result: int
    rows_with_tools_column: int
    rows_without_assistant: list[int] = Field(description="indices (first 20) of rows with no assistant turn")


class DatasetReport(BaseModel):
    source: str
    files: list[str]
    num_rows: int
    columns: list[Column]
    format: str | None = Field(description="messages | prompt_completion | None when neither")
    conversations: ConversationStats | None = None
    first_row: str = Field(description="the first row as JSON, cut to 1500 characters")
    notes: list[str] = Field(default_factory=list, description="problems found and what to do about them")
