"""What a conversion counts: per file (problems in the input) and in total (what was written).

Every skipped or dropped item is counted under a reason, so nothing disappears silently:

- input problems (``problems``): ``malformed_line`` (undecodable, or two JSON objects on one line — both
  are still read), ``partial_json_leftover`` (a tool call still carrying a streaming fragment),
  ``missing_parent``, ``duplicate_uuid``, ``unknown_entry_type`` / ``_block_type`` / ``_part_type``, …;
- dropped turns (``dropped``): ``aborted_turn``, ``error_turn``, ``empty_assistant_turn``,
  ``assistant_turn_without_prompt``, ``trailing_user_turn``, ``off_branch_turn``, ``harness_context``,
  ``harness_noise``, and content replaced by a placeholder (``image_omitted``);
- tool pairing (``dropped``): ``tool_call_without_result`` (dropped unless kept, and counted also when
  its failed turn was dropped), ``tool_result_without_call``, ``tool_result_of_dropped_turn``;
- whole conversations or rows (``dropped``): ``no_assistant_turn``, ``model_filter``,
  ``min_assistant_turns``, ``max_tokens``.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

MAX_LISTED = 20
PROBLEMS = {"malformed_line", "malformed_file", "malformed_row", "partial_json_leftover", "duplicate_uuid",
            "missing_parent", "missing_session_header", "unknown_entry_type", "unknown_block_type",
            "unknown_part_type", "unknown_message_role", "row_without_messages", "unreadable_source",
            "unreadable_conversation"}


class FileReport(BaseModel):
    path: str
    format: str
    lines: int = 0
    sessions: int = 0
    conversations: int = 0
    malformed_lines: list[int] = Field(default_factory=list, description=f"line numbers (first {MAX_LISTED})")
    issues: dict[str, int] = Field(default_factory=dict, description="reason → count")
    skipped_types: dict[str, int] = Field(default_factory=dict, description="entry types that are not turns")

    def add(self, reason: str, n: int = 1) -> None:
        if n:
            self.issues[reason] = self.issues.get(reason, 0) + n

    def malformed(self, line: int) -> None:
        self.add("malformed_line")
        if len(self.malformed_lines) < MAX_LISTED:
            self.malformed_lines.append(line)

    def skip(self, kind: str) -> None:
        self.skipped_types[kind] = self.skipped_types.get(kind, 0) + 1


class ConvertReport(BaseModel):
    """The stats of one conversion (the short form is what the CLI prints and the MCP tool returns)."""

    output: str | None
    stats_path: str | None = None
    row_format: str
    rows: int = 0
    sessions: int = 0
    conversations: int = 0
    assistant_turns: int = 0
    tool_calls: int = 0
    tool_calls_by_name: dict[str, int] = Field(default_factory=dict)
    tokens: int = 0
    token_counter: str = "estimate (characters / 4)"
    formats: dict[str, int] = Field(default_factory=dict, description="files (or stores) per detected format")
    thinking: dict[str, int] = Field(default_factory=dict, description="reasoning blocks kept / dropped")
    problems: dict[str, int] = Field(default_factory=dict, description="input problems, summed over files")
    dropped: dict[str, int] = Field(default_factory=dict, description="reason → count, summed over files")
    redactions: dict[str, int] = Field(default_factory=dict, description="secret kind → replacements")
    notes: list[str] = Field(default_factory=list)
    source: dict | None = Field(None, description="sessions from a Hub dataset repo: hub_id, revision, commit and "
                                                  "each file's size and sha256")
    windows: dict | None = Field(None, description="rows=window: turns trained and dropped (by reason), windows, "
                                                   "and the compute multiplier (tokens processed ÷ session tokens)")
    verified: dict | None = Field(None, description="only_verified: rollouts seen, failed, repeats, over the cap, "
                                                    "kept, problems, and the lineage of the run that wrote them")
    files: list[FileReport] = Field(default_factory=list)

    def short(self) -> dict:
        """The report without the per-file list, plus the files that had problems (capped)."""
        out = self.model_dump(exclude={"files"})
        noisy = [f for f in self.files if f.malformed_lines or f.issues]
        out["files"] = len(self.files)
        out["files_with_issues"] = [
            {"path": f.path, "format": f.format, "malformed_lines": f.malformed_lines, "issues": f.issues}
            for f in noisy[:10]]
        tools = sorted(self.tool_calls_by_name.items(), key=lambda kv: -kv[1])
        out["tool_calls_by_name"] = dict(tools[:25])
        if self.source and len(self.source.get("files", [])) > 10:  # the full list stays in the stats file
            out["source"] = {**self.source, "files": self.source["files"][:10],
                             "files_total": len(self.source["files"])}
        return out


def total(files: list[FileReport]) -> tuple[dict[str, int], dict[str, int]]:
    """(input problems, dropped items), each reason → count summed over ``files``."""
    counts: Counter[str] = Counter()
    for f in files:
        counts.update(f.issues)
    problems = {k: v for k, v in sorted(counts.items()) if k in PROBLEMS or k.startswith("error:")}
    return problems, {k: v for k, v in sorted(counts.items()) if k not in problems}
