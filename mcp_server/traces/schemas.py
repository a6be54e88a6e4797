"""Tool JSON schemas for the ``tools`` column.

Most harnesses store no tool schemas in their sessions (Pi, Claude Code, Codex, OpenCode), yet chat
templates render the tool list into the prompt and the model should learn calls against it. So the
schemas are inferred from the calls observed for each format across the whole conversion: every
argument key becomes a property whose JSON type is the one seen (several types become a type list),
and a key is required when every call passed it. Schemas a format does store (OpenAI rows, Codex
``dynamic_tools``) win; inferred ones only fill in the tools a conversation calls without declaring.

Usage:
    catalog = ToolCatalog(); catalog.observe("pi", messages); tools = catalog.tools_for("pi", declared, called)
"""

from __future__ import annotations

from collections import defaultdict

_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
               (dict, "object"))


def json_type(value) -> str:
    if value is None:
        return "null"
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return "string"


class _ToolStats:
    def __init__(self) -> None:
        self.calls = 0
        self.keys: dict[str, int] = {}
        self.types: dict[str, dict[str, None]] = defaultdict(dict)  # ordered sets
        self.item_types: dict[str, dict[str, None]] = defaultdict(dict)

    def add(self, arguments: dict) -> None:
        self.calls += 1
        for key, value in arguments.items():
            self.keys[key] = self.keys.get(key, 0) + 1
            self.types[key][json_type(value)] = None
            if isinstance(value, list):
                for item in value[:20]:
                    self.item_types[key][json_type(item)] = None

    def schema(self, name: str) -> dict:
        properties = {}
        for key in self.keys:
            types = [t for t in self.types[key] if t != "null"] or ["string"]
            prop: dict = {"type": types[0] if len(types) == 1 else types}
            items = list(self.item_types.get(key, {}))
            if "array" in types and len(items) == 1:
                prop["items"] = {"type": items[0]}
            properties[key] = prop
        required = [k for k, n in self.keys.items() if n == self.calls]
        return {"type": "function", "function": {
            "name": name,
            "description": f"{name} (arguments inferred from {self.calls} recorded call{'s' * (self.calls != 1)})",
            "parameters": {"type": "object", "properties": properties, "required": required}}}


def clean_declared(tools) -> list[dict]:
    """Function tools of a stored ``tools`` list in the OpenAI shape; other entries are skipped."""
    out = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if tool.get("type", "function") == "function" else None
        if fn is None and "name" in tool and "parameters" in tool:  # a bare function schema
            fn = tool
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out.append({"type": "function", "function": {
                "name": fn["name"], "description": fn.get("description") or "",
                "parameters": fn.get("parameters") or {"type": "object", "properties": {}}}})
    return out


class ToolCatalog:
    """Observed calls per (format, tool name) → inferred schemas."""

    def __init__(self) -> None:
        self._stats: dict[str, dict[str, _ToolStats]] = defaultdict(dict)

    def observe(self, fmt: str, messages: list[dict]) -> None:
        for message in messages:
            for call in message.get("tool_calls") or []:
                fn = call["function"]
                self._stats[fmt].setdefault(fn["name"], _ToolStats()).add(fn["arguments"])

    def inferred(self, fmt: str) -> list[dict]:
        return [stats.schema(name) for name, stats in sorted(self._stats.get(fmt, {}).items())]

    def tools_for(self, fmt: str, declared: list[dict] | None, called: set[str], synthesize: bool = True) -> list[dict]:
        """The declared tools plus inferred ones: all of the format's when nothing is declared, else only
        those the conversation calls without declaring them."""
        declared = clean_declared(declared)
        if not synthesize:
            return declared
        names = {t["function"]["name"] for t in declared}
        return declared + [t for t in self.inferred(fmt) if t["function"]["name"] not in names
                           and (not declared or t["function"]["name"] in called)]
