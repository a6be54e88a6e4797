"""What tools/list sends of each schema: every tool's schemas sit in the agent's context on every turn.

Input schemas lose pydantic's ``title`` keys (a name the property already has); the descriptions, types, limits
and defaults stay. Output schemas keep their top level — each field, its type and its description, not pydantic's defaults —
and nested objects become ``{"type": "object"}``: the structured result itself shows their fields, and a client that checks
the result against the schema still can (the compact schema admits every result the full one admits)."""

from __future__ import annotations

from typing import Any

VALUES = ("default", "const", "enum", "examples")  # data, not schema: never rewritten


def _walk(node: Any, drop: tuple[str, ...], refs: bool) -> Any:
    if isinstance(node, list):
        return [_walk(v, drop, refs) for v in node]
    if not isinstance(node, dict):
        return node
    if refs and "$ref" in node:
        return {"type": "object"}
    out = {}
    for key, value in node.items():
        if key in drop and isinstance(value, str):
            continue
        if refs and key == "$defs":
            continue
        out[key] = value if key in VALUES else _walk(value, drop, refs)
    return out


def compact_input(schema: dict[str, Any]) -> dict[str, Any]:
    return _walk(schema, ("title",), refs=False)


def compact_output(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if not schema:
        return schema
    out = _walk(schema, ("title", "description"), refs=True)
    for name, prop in (schema.get("properties") or {}).items():
        out["properties"][name].pop("default", None)  # a result's field has a value, not a default
        if isinstance(prop, dict) and isinstance(prop.get("description"), str):
            out["properties"][name]["description"] = prop["description"]
    return out
