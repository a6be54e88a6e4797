"""Java and JavaScript argument values for BFCL, read and written the way BFCL's checker reads them.

In BFCL's Java and JavaScript categories every parameter is offered to the model as a *string* holding
source code (``"42L"``, ``"new ArrayList<>(Arrays.asList(\\"a\\"))"``, ``"{key: 'v'}"``); the checker turns
that string into a Python value by the parameter's declared type and compares the result with the possible
answers. ``java_value`` / ``js_value`` do that reading, rule for rule as BFCL 2026.3.23 does (its regular
expressions are the facts reproduced here, quirks included: a Java ``String`` keeps any quotes it was
written with, a Java ``long`` needs its ``L``, a JavaScript dict is read only one level deep). Text that
does not read as the declared type stays a string, which then fails the type check unless the possible
answers name a variable. ``write_java`` / ``write_js`` go the other way, for building reference answers.
"""

from __future__ import annotations

import re

JAVA_TYPES = {"byte": int, "short": int, "integer": int, "long": int, "float": float, "double": float,
              "boolean": bool, "char": str, "String": str, "any": str, "Array": list, "ArrayList": list,
              "Queue": list, "Stack": list, "Set": set, "HashMap": dict, "Hashtable": dict}
JS_TYPES = {"String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool, "dict": dict,
            "array": list, "any": str}

_INT = re.compile(r"-?\d+")
_JAVA_FLOAT = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]")
_JAVA_DOUBLE = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_JAVA_LONG = re.compile(r"-?\d+[lL]")
_JAVA_SUFFIX = {"long": "L", "float": "f"}
_JS_FLOAT = re.compile(r"-?\d+(\.\d+)?")
_JS_BIGINT = re.compile(r"-?\d+n")


# --- Java -----------------------------------------------------------------------------------------------

def java_value(text: str, java_type: str, item_type: str | None = None):
    """The Python value BFCL's checker reads from ``text`` for a Java parameter of ``java_type``."""
    if java_type in ("byte", "short", "integer"):
        return int(text) if _INT.fullmatch(text) else text
    if java_type == "long":
        return int(text[:-1]) if _JAVA_LONG.fullmatch(text) else text
    if java_type == "float":
        return float(text[:-1]) if _JAVA_FLOAT.fullmatch(text) else text
    if java_type == "double":
        return float(text) if _JAVA_DOUBLE.fullmatch(text) else text
    if java_type == "boolean":
        return text == "true" if text in ("true", "false") else text
    if java_type == "ArrayList":
        return _java_arraylist(text, item_type)
    if java_type == "Array":
        return _java_array(text, item_type)
    if java_type == "HashMap":
        return _java_hashmap(text)
    return text  # String, char and any are taken as written; BFCL does not read the other collections


def _java_item(text: str, item_type: str | None):
    return java_value(text, item_type) if item_type else _java_literal(text)


def _java_arraylist(text: str, item_type: str | None):
    def element(raw: str):
        raw = raw.strip()
        return raw[1:-1] if item_type in ("char", "String") else _java_item(raw, item_type)

    if m := re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text):
        return [element(part) for part in m.group(1).split(",")]
    if m := re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.S):
        return [element(part) for part in re.findall(r"add\((.+?)\)", m.group(1))]
    return [] if re.search(r"new\s+ArrayList<\w*>\(\)", text) else text


def _java_array(text: str, item_type: str | None):
    m = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
    if not m:
        return text
    return [_java_item(part.strip(), item_type) for part in m.group(1).split(",") if part.strip()]


def _java_hashmap(text: str):
    m = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.S)
    if m:
        return {key: _java_literal(value.strip())
                for key, value in re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", m.group(1))}
    return {} if re.search(r"new\s+HashMap<.*?>\s*\(\)", text) else text


def _java_literal(text: str):
    """A Java literal of unknown type: boolean, "string", 12L, 1.5f, a number, or else the text itself."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _JAVA_LONG.fullmatch(text):
        return int(text[:-1])
    if _JAVA_FLOAT.fullmatch(text):
        return float(text[:-1])
    return _number_or_text(text)


def _number_or_text(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def write_java(value, java_type: str, item_type: str | None = None) -> str:
    """Java source that ``java_value`` reads back as ``value`` (for reference answers)."""
    if java_type in ("String", "char", "any") or isinstance(value, str):
        return str(value)  # taken as written (a string value for another type is a variable name)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value}{_JAVA_SUFFIX.get(java_type, '')}"
    if isinstance(value, dict):
        puts = "".join(f'put("{k}", {_write_java_literal(v)}); ' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts}}}}}"
    if java_type == "ArrayList":
        quote = '"' if item_type in ("char", "String") else ""
        items = ", ".join(quote + write_java(v, item_type or "any") + quote for v in value)
        return f"new ArrayList<>(Arrays.asList({items}))" if value else "new ArrayList<>()"
    return "new Object[]{" + ", ".join(write_java(v, item_type or "any") for v in value) + "}"


def _write_java_literal(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return write_java(value, "double" if isinstance(value, float) else "integer")


# --- JavaScript -----------------------------------------------------------------------------------------

def js_value(text: str, js_type: str, item_type: str | None = None):
    """The Python value BFCL's checker reads from ``text`` for a JavaScript parameter of ``js_type``."""
    if js_type == "String":
        return text[1:-1] if _quoted(text) else text
    if js_type == "integer":
        return int(text) if _INT.fullmatch(text) else text
    if js_type == "float":
        return float(text) if _JS_FLOAT.fullmatch(text) else text
    if js_type == "Bigint":
        return int(text[:-1]) if _JS_BIGINT.fullmatch(text) else text
    if js_type == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if js_type == "array":
        return _js_array(text.strip(), item_type)
    if js_type == "dict":
        return _js_dict(text.strip())
    if js_type == "any":
        return text
    raise ValueError(f"not a BFCL JavaScript type: {js_type!r}")


def _quoted(text: str) -> bool:
    return text[:1] in ("'", '"') and text.endswith(text[0])


_JS_2D = re.compile(r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)")
_JS_1D = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")


def _js_array(code: str, item_type: str | None):
    if m := _JS_2D.match(code):
        rows = [row.strip() for row in re.findall(r"\[(.*?)\]", m.group(0))]
        rows[0] = rows[0].removeprefix("[")
        return [[_js_literal(part) for part in row.split(",")] for row in rows]
    m = _JS_1D.match(code)
    if not m:
        return code
    inside = (m.group(1) if m.group(1) is not None else m.group(2) or "").strip()
    parts = [part.strip() for part in inside.split(",")] if inside else []
    if not item_type:
        return [_js_literal(part) for part in parts]
    try:
        return [js_value(part, item_type) for part in parts]
    except ValueError:  # an element type BFCL cannot read: the whole text stays a string
        return code


def _js_dict(code: str):
    if code == "{}":
        return {}
    m = re.match(r"\{(.*?)\}", code)
    if not m:
        return code
    result: dict = {}
    for key, raw in re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", m.group(1)):
        raw = raw.strip()
        if raw.startswith("[") and raw.endswith("]"):
            result[key.strip().strip("'\"")] = _js_array(raw, None)
        elif raw.startswith("{") and raw.endswith("}"):
            result[key.strip().strip("'\"")] = _js_dict(raw)
        else:
            result[key.strip().strip("'\"")] = _js_literal(raw.strip("'\""))
    return result


def _js_literal(text: str):
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    return text[1:-1] if _quoted(text) else _number_or_text(text)


def write_js(value, js_type: str, item_type: str | None = None) -> str:
    """JavaScript source that ``js_value`` reads back as ``value`` (for reference answers)."""
    if isinstance(value, str):
        return f'"{value}"' if js_type == "String" else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value}n" if js_type == "Bigint" else _js_number(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_write_js_literal(v)}" for k, v in value.items()) + "}"
    if any(isinstance(v, list) for v in value):
        return "[" + ", ".join(_write_js_literal(v) for v in value) + "]"
    return "[" + ", ".join(write_js(v, item_type or "any") for v in value) + "]"


def _js_number(value: int | float) -> str:
    text = repr(value)
    return f"{value:f}" if "e" in text else text


def _write_js_literal(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_write_js_literal(v) for v in value) + "]"
    return f'"{value}"' if isinstance(value, str) else write_js(value, "any")
