"""DuckDB column types seen as ``datasets`` features, and DuckDB values as the JSON the service sends.

The service describes columns with ``datasets`` feature dicts (``{"_type": "Value", "dtype": "string"}``,
``{"_type": "List", "feature": …}``, a plain dict for a struct, ``{"_type": "Json"}`` for mixed types);
the twin derives the same from DuckDB's types. Values are made JSON-safe the way the service's
encoder does (NaN → null, dates as ISO strings), and JSON-typed cells (a field that is a dict in some
rows and a string in others) are decoded back to what the file held.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from typing import Any

_VALUE = {
    "bigint": "int64", "integer": "int32", "smallint": "int16", "tinyint": "int8", "hugeint": "int64",
    "ubigint": "uint64", "uinteger": "uint32", "usmallint": "uint16", "utinyint": "uint8", "uhugeint": "uint64",
    "double": "float64", "float": "float32", "boolean": "bool", "date": "date32", "time": "time64[us]",
    "timestamp": "timestamp[us]", "timestamp_ms": "timestamp[ms]", "timestamp_ns": "timestamp[ns]",
    "timestamp_s": "timestamp[s]", "timestamp with time zone": "timestamp[us, tz=UTC]", "blob": "binary",
    "uuid": "string", "interval": "duration[us]", "enum": "string", "null": "null", "varchar": "string",
}
INT_IDS = {"bigint", "integer", "smallint", "tinyint", "hugeint", "ubigint", "uinteger", "usmallint", "utinyint",
           "uhugeint"}
FLOAT_IDS = {"double", "float", "decimal"}


def is_json(duck_type) -> bool:
    return str(duck_type) == "JSON"


def feature(duck_type) -> dict[str, Any]:
    """The ``datasets`` feature dict for a DuckDB type."""
    kind = duck_type.id
    if kind == "varchar":
        return {"_type": "Json"} if is_json(duck_type) else {"dtype": "string", "_type": "Value"}
    if kind == "list":
        return {"feature": feature(dict(duck_type.children)["child"]), "_type": "List"}
    if kind == "array":
        children = dict(duck_type.children)
        return {"feature": feature(children["child"]), "length": children.get("size", -1), "_type": "List"}
    if kind == "struct":
        return {name: feature(child) for name, child in duck_type.children}
    if kind == "decimal":
        children = dict(duck_type.children)
        return {"dtype": f"decimal128({children['precision']}, {children['scale']})", "_type": "Value"}
    if kind in ("map", "union"):
        return {"_type": "Json"}
    return {"dtype": _VALUE.get(kind, "string"), "_type": "Value"}


def _scalar(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    return value


def to_json_value(value: Any, feat: Any) -> Any:
    """A DuckDB value as the JSON the service would send for a cell of this feature."""
    if value is None:
        return None
    if isinstance(feat, dict) and feat.get("_type") == "Json":
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return _plain(value)
    if isinstance(feat, dict) and feat.get("_type") == "List":
        return [to_json_value(v, feat["feature"]) for v in value]
    if isinstance(feat, dict) and "_type" not in feat and isinstance(value, dict):
        return {k: to_json_value(v, feat.get(k)) for k, v in value.items()}
    return _scalar(value)


def converter(feat: Any):
    """A function turning a DuckDB value into the service's JSON for this feature, or None when the value
    is already that (strings, ints, bools and structs/lists of them): rows then skip per-cell work."""
    if not isinstance(feat, dict):
        return None
    kind = feat.get("_type")
    if kind == "Value":
        if feat["dtype"] in ("string", "bool", "null") or feat["dtype"].startswith(("int", "uint")):
            return None
        return _scalar
    if kind == "List":
        inner = converter(feat["feature"])
        return None if inner is None else (lambda v: None if v is None else [inner(x) for x in v])
    if kind is None:  # a struct
        fields = {k: c for k, f in feat.items() if (c := converter(f)) is not None}
        if not fields:
            return None
        return lambda v: None if v is None else {k: (fields[k](x) if k in fields else x) for k, x in v.items()}
    return lambda v: to_json_value(v, feat)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return _scalar(value)


def quote(name: str) -> str:
    """A SQL identifier, double-quoted with inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def _lambda(var: str, body: str) -> str:
    """DuckDB ≥ 1.3 spells lambdas ``lambda x: …`` (2.0 rejects ``x -> …``); older versions only know
    the arrow."""
    import duckdb

    major, minor = (int(p) for p in duckdb.__version__.split(".")[:2])
    return f"lambda {var}: {body}" if (major, minor) >= (1, 3) else f"{var} -> {body}"


def text_sql(expr: str, duck_type, depth: int = 0) -> str | None:
    """A SQL expression concatenating every string inside ``expr`` (nested lists and structs included),
    or None when the type holds no text. Feeds the full-text index."""
    kind = duck_type.id
    if kind == "varchar" or kind == "enum":
        return f"coalesce(CAST({expr} AS VARCHAR), '')"
    if kind == "list" or kind == "array":
        var = f"x{depth}"
        inner = text_sql(var, dict(duck_type.children)["child"], depth + 1)
        return None if inner is None else \
            f"coalesce(array_to_string(list_transform({expr}, {_lambda(var, inner)}), ' '), '')"
    if kind == "struct":
        found = [text_sql(f"{expr}.{quote(name)}", child, depth) for name, child in duck_type.children]
        parts = [p for p in found if p is not None]
        return None if not parts else f"concat_ws(' ', {', '.join(parts)})"
    return None
