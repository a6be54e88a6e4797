"""BFCL's AST matching: does a list of tool calls match an item's possible answers?

The rules are BFCL 2026.3.23's (``bfcl_eval/eval_checker/ast_eval/ast_checker.py``), written afresh:

- one call against one answer ``{function: {param: [possible values]}}``: same name (compared exactly, dots
  kept), every required parameter present, no parameter the schema or the answer lacks, each value of the
  declared type, each value among the possible ones, and every answer parameter present unless ``""`` is
  among its possible values (``""`` marks "may be left out");
- types are exact (``True`` is not an integer) except that an integer passes for a Python ``float``; a
  value of the type of the possible answers themselves also passes (BFCL's "variable" case, e.g. a string
  ``"my_data"`` for an array parameter) and is then compared as is;
- strings are compared after :func:`standardize` (case, spaces and ``,./-_*^`` ignored, ``'`` read as
  ``"``), also inside lists and one level into dicts; numbers, booleans and nested values exactly (``==``);
- Java and JavaScript values must be strings of source code, read by ``bfcl_values`` first;
- several calls (the parallel categories) are paired with the answers one to one in any order. BFCL pairs
  them greedily; this module finds a full matching when one exists, which can only differ when one call
  satisfies two answers, and then counts an answer correct that BFCL might not.
"""

from __future__ import annotations

import re
from typing import Any, cast

from .bfcl_values import JAVA_TYPES, JS_TYPES, java_value, js_value

PYTHON_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
                "dict": dict, "any": str}
_ITEM_CHECKED = {"python": ("array", "tuple"), "java": ("Array", "ArrayList"), "javascript": ("array",)}
_TABLES = {"python": PYTHON_TYPES, "java": JAVA_TYPES, "javascript": JS_TYPES}


def standardize(text: str) -> str:
    """A string as BFCL compares it: without spaces and ``,./-_*^``, lower case, ``'`` turned into ``"``."""
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def calls_problem(functions: list[dict], calls: list[tuple[str, dict]], answers: list[dict], language: str,
                  parallel: bool) -> str | None:
    """Why ``calls`` (name, arguments) do not match ``answers``; None when they do."""
    if len(calls) != len(answers):
        return f"wrong number of calls: {len(calls)} made, {len(answers)} expected"
    if not parallel:  # simple and multiple: the one call against the one answer
        return call_problem(_doc(functions, answers[0]), *calls[0], answers[0], language)
    problems = [[call_problem(_doc(functions, answer), name, arguments, answer, language)
                 for name, arguments in calls] for answer in answers]
    for i, row in enumerate(problems):
        if all(row):
            name = next(iter(answers[i]))
            same = [p for (called, _), p in zip(calls, row, strict=True) if called == name]
            return f"no call matches expected call {i + 1} ({name}): {same[0] if same else 'no call to it'}"
    if not _full_matching([[p is None for p in row] for row in problems]):
        return "the calls cannot be paired one to one with the expected calls"
    return None


def _doc(functions: list[dict], answer: dict) -> dict:
    name = next(iter(answer))
    return next((f for f in functions if f["name"] == name), {"name": name, "parameters": {"properties": {}}})


def _full_matching(fits: list[list[bool]]) -> bool:
    """Whether every answer (row) gets its own call (column), by augmenting paths."""
    owner: dict[int, int] = {}

    def place(row: int, seen: set[int]) -> bool:
        for col, fit in enumerate(fits[row]):
            if fit and col not in seen:
                seen.add(col)
                if col not in owner or place(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    return all(place(row, set()) for row in range(len(fits)))


def call_problem(doc: dict, name: str, arguments: dict, answer: dict, language: str) -> str | None:
    """Why one call does not match one answer of the function ``doc``; None when it does."""
    expected, options = next(iter(answer.items()))
    if name != expected:
        return f"wrong function name {name!r} (expected {expected!r})"
    if not isinstance(arguments, dict):
        return f"the arguments of {name!r} are not an object"
    schema = doc["parameters"]
    for param in schema.get("required", []):
        if param not in arguments:
            return f"missing required argument {param!r}"
    for param, value in arguments.items():
        if param not in schema["properties"] or param not in options:
            return f"unexpected argument {param!r}"
        if problem := _argument_problem(param, value, schema["properties"][param], options[param], language):
            return problem
    for param, allowed in options.items():
        if param not in arguments and "" not in allowed:
            return f"missing argument {param!r} (the answer needs it)"
    return None


def _argument_problem(param: str, value, schema: dict, allowed: list, language: str) -> str | None:
    declared, table = schema.get("type", ""), _TABLES[language]
    item_declared = schema.get("items", {}).get("type") if declared in _ITEM_CHECKED[language] else None
    want, item_want = table.get(declared, str), table.get(item_declared or "")
    if language != "python":
        if type(value) is not str:
            return (f"wrong type for {param!r}: {language} values are given as strings of source code, "
                    f"got {type(value).__name__} {value!r}")
        value = (java_value if language == "java" else js_value)(value, declared, item_declared)
    elif declared == "float" and type(value) is int:
        value = float(value)
    fits, variable = _type_fits(value, allowed, want, item_want)
    if not fits:
        of = f" of {item_declared}" if item_declared else ""
        return f"wrong type for {param!r}: expected {declared}{of}, got {type(value).__name__} {value!r}"
    if not variable:
        if want is dict:
            return _dict_problem(param, value, allowed)
        if want is list and item_want is dict:
            return _dict_list_problem(param, value, allowed)
        if want is str and standardize(value) in [standardize(a) for a in allowed if type(a) is str]:
            return None
        if want is list and _standard_list(value) in [_standard_list(a) for a in allowed]:
            return None
        if want in (str, list):
            return f"value not allowed for {param!r}: {value!r} (allowed: {allowed!r})"
    return None if value in allowed else f"value not allowed for {param!r}: {value!r} (allowed: {allowed!r})"


def _type_fits(value: Any, allowed: list, want: type, item_want: type | None) -> tuple[bool, bool]:
    """(the type is right, the value stands for a variable): BFCL's type rule, items checked one level."""
    answer_type = next((type(a) for a in allowed if not (type(a) is str and a == "")), None)
    variable = answer_type is not None and answer_type is not want
    if type(value) is want:
        if item_want is None:
            return True, variable
        for option in allowed:  # the items must fit the item type for at least one possible answer
            if type(option) is not list or all(_type_fits(v, option, item_want, None)[0] for v in cast(list, value)):
                return True, variable
        return False, False
    return (True, True) if answer_type is not None and type(value) is answer_type else (False, False)


def _standard_list(values) -> list:
    """A list with its strings standardized (a string answer counts as its characters, as in BFCL)."""
    items = values if isinstance(values, (list, str)) else []
    return [standardize(v) if type(v) is str else v for v in items]


def _dict_problem(param: str, value: dict, allowed: list) -> str | None:
    problem: str | None = f"value not allowed for {param!r}: {value!r} (allowed: {allowed!r})"
    for option in allowed:
        if type(option) is dict and (problem := _one_dict_problem(param, value, option)) is None:
            return None
    return problem


def _one_dict_problem(param: str, value: dict, option: dict) -> str | None:
    for key, got in value.items():
        if key not in option:
            return f"unexpected key {key!r} in {param!r}"
        if (standardize(got) if type(got) is str else got) not in _standard_list(option[key]):
            return f"value not allowed for {param!r}[{key!r}]: {got!r} (allowed: {option[key]!r})"
    for key, allowed in option.items():
        if key not in value and not (isinstance(allowed, (list, str)) and "" in allowed):
            return f"missing key {key!r} in {param!r}"
    return None


def _dict_list_problem(param: str, value: list, allowed: list) -> str | None:
    problem: str | None = f"value not allowed for {param!r}: {value!r} (allowed: {allowed!r})"
    for option in allowed:
        if not isinstance(option, (list, str)) or len(option) != len(value):
            problem = f"wrong number of items in {param!r}: {len(value)}"
            continue
        for got, want in zip(value, option, strict=True):
            problem = _dict_problem(param, got, [want]) if type(got) is dict else \
                f"value not allowed for {param!r}: item {got!r} is not an object"
            if problem:
                break
        else:
            return None
    return problem
