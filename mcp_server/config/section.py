"""The base of every config section: unknown keys forbidden, assignments validated, no derived titles."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


def untitled(schema: dict) -> None:
    """Drop the titles pydantic derives from field names: a tool's schema sits in an agent's context on every
    turn, and "Max Tokens" says nothing "max_tokens" does not."""
    for field in schema.get("properties", {}).values():
        field.pop("title", None)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, json_schema_extra=untitled)
