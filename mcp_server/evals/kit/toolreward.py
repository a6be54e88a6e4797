"""The tool_call reward: does a completion make the expected tool call, in the model family's own syntax?

    result = tool_call_reward("hermes", text, row)     # {"score": 0.75, "parts": {...}}

``row`` carries ``tools`` (JSON schemas, OpenAI function format) and ``reference``: the call expected,
``{"name": N, "arguments": {...}}``, or ``None`` where the right move is an answer in text, no call (both
may also come as JSON strings). ``text`` is read by the family's parser (toolcalls.py), as next-action
reads it. The score, in [0, 1]:

- reference call: 0 when the text makes no call or its calls do not parse (well_formed False); else
  0.25 for the well-formed call
  + 0.25 when the first call names the reference's tool
  + 0.25 when its arguments fit the schema of the tool it names (every required key present, no key the
  schema does not list unless ``additionalProperties`` allows it, JSON types and ``enum`` right; nested
  objects and array items alike; other JSON Schema keywords are not checked). A tool not in ``tools`` fits no schema.
  + 0.25 when it names the reference's tool and its arguments equal the reference's (compared as JSON,
  as next-action's arg_values).
  Further calls after the first are neither scored nor penalised: ``parts["extra_calls"]`` counts them.
- reference None: 1.0 when the text makes no call attempt (no call, nothing that tried to be one), else 0.

``parts``: expected ("call" | "answer"), called (a call attempt, well-formed or not), well_formed, name,
schema, values (None where the part does not apply), extra_calls, error (the parser's, or None).
Standard library and sibling kit modules only: the module is embedded into training scripts.
"""

from __future__ import annotations

from .nextaction import _json, _same
from .toolcalls import Call, parse

PART = 0.25
_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)}


def tool_call_reward(family: str, text: str, row: dict) -> dict:
    """{"score": float in [0, 1], "parts": {...}} for one completion (see the module docstring)."""
    parsed = parse(family, text)
    called = bool(parsed.calls) or not parsed.well_formed  # a broken call is still a call, not an answer
    ref = reference_call(row.get("reference"))
    parts: dict = {"expected": "call" if ref else "answer", "called": called, "well_formed": parsed.well_formed,
                   "name": None, "schema": None, "values": None,
                   "extra_calls": max(len(parsed.calls) - 1, 0), "error": parsed.error}
    if ref is None:
        return {"score": 0.0 if called else 1.0, "parts": parts}
    if not parsed.calls or not parsed.well_formed:
        return {"score": 0.0, "parts": {**parts, "name": False, "schema": False, "values": False}}
    first = parsed.calls[0]
    named = first.name == ref.name
    parts.update(name=named, schema=arguments_fit(first.arguments, _json(row.get("tools")) or [], first.name),
                 values=named and _same(first.arguments, ref.arguments))
    return {"score": PART * (1 + parts["name"] + parts["schema"] + parts["values"]), "parts": parts}


def reference_call(reference) -> Call | None:
    """The expected call from a row's ``reference`` ({name, arguments}, OpenAI's {function: ...}, or JSON)."""
    reference = _json(reference)
    if not isinstance(reference, dict):
        return None
    fn = reference.get("function") or reference
    arguments = _json(fn.get("arguments"))
    return Call(str(fn.get("name")), arguments if isinstance(arguments, dict) else {})


def arguments_fit(arguments: dict, tools: list[dict], name: str) -> bool:
    """Whether ``arguments`` fit the parameters schema of the tool called ``name`` among ``tools``."""
    tool = next((t.get("function", t) for t in tools if t.get("function", t).get("name") == name), None)
    if tool is None:
        return False
    return _object_fits(arguments, tool.get("parameters") or {"type": "object", "properties": {}})


def _object_fits(value: dict, schema: dict) -> bool:
    properties, extra = schema.get("properties") or {}, schema.get("additionalProperties", False)
    if any(key not in value for key in schema.get("required") or []):
        return False
    for key, item in value.items():
        sub = properties.get(key, extra)
        if sub is False or (isinstance(sub, dict) and not _value_fits(item, sub)):
            return False
    return True


def _value_fits(value, schema: dict) -> bool:
    kinds = schema.get("type")
    if kinds is not None and not any(_is(value, k) for k in ([kinds] if isinstance(kinds, str) else kinds)):
        return False
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        return False
    if isinstance(value, dict) and "properties" in schema:
        return _object_fits(value, schema)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return all(_value_fits(v, schema["items"]) for v in value)
    return True


def _is(value, kind: str) -> bool:
    """JSON Schema's type test (an unknown type name is not judged)."""
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, int | float)
    return isinstance(value, _TYPES.get(kind, object))
