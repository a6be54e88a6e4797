"""MCP tools of the skills room: list and read the how-to guides, record a pitfall into one."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..skills import PitfallResult, SkillInfo, add_pitfall, list_skills, read_skill
from .common import ServerMode, guarded


@guarded
def skills_list() -> list[SkillInfo]:
    """The skills (how-to guides for each pipeline step) with their versions and files."""
    return list_skills()


@guarded
def skills_read(name: Annotated[str, Field(description="Skill name from skills_list.")],
                file: Annotated[str | None, Field(description="A file of the skill (default SKILL.md).")] = None,
                offset: Annotated[int, Field(description="Read on from here (a cut page says).", ge=0)] = 0,
                section: Annotated[str | None, Field(description="Only this heading's part.")] = None) -> str:
    """Read a skill's SKILL.md (or another of its files), a page at a time."""
    return read_skill(name, file, offset, section, served=ServerMode.served)


@guarded
def skills_add_pitfall(skill: Annotated[str, Field(description="Skill the pitfall belongs to (skills_list).")],
                       symptom: Annotated[str, Field(description="What you saw, one line (8-200 chars).")],
                       cause: Annotated[str, Field(description="Why it happened (8-1000 chars).")],
                       fix: Annotated[str, Field(description="What to do instead (8-1000 chars).")],
                       evidence: Annotated[str, Field(description="A job id, log line or error message.")] = "",
                       source: Annotated[str, Field(description="Who found it (agent/harness name, run).")]
                       = "agent") -> PitfallResult:
    """Record a pitfall no skill warned about, so the next run does not repeat it (a near-duplicate returns the
    existing entry's id; secrets redacted; the skill's patch version bumped)."""
    return add_pitfall(skill, symptom=symptom, cause=cause, fix=fix, evidence=evidence, source=source)


TOOLS = [skills_list, skills_read, skills_add_pitfall]
