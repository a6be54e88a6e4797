"""BFCL (Berkeley Function Calling Leaderboard) single-turn items and their scoring, offline.

    items = load("simple_python", limit=50)                    # Item(id, category, messages, tools, ...)
    text = tokenizer.apply_chat_template(**prompt_messages(items[0]), add_generation_prompt=True,
                                         tokenize=False)
    verdict = check(items[0], toolcalls.parse(family, generated).calls)   # Check(correct, reason)

Data: the files of the PyPI package ``bfcl-eval==2026.3.23`` (``bfcl_eval/data``), found with
``importlib.util.find_spec`` and never imported (its ``__init__`` pulls in provider SDKs; install it with
``pip install --no-deps``). ``source`` may instead name a folder holding the data or the package's wheel
file. Every file read is checked against the sha256 pinned in ``PINS`` (a wheel also against
``WHEEL_SHA256``), so a score always means the same questions and answers.

Prompting: as BFCL runs function-calling models, the function docs go in ``tools`` (OpenAI-style JSON
Schema, converted as BFCL converts them: ``dict`` -> object, ``float`` -> number, ``tuple`` -> array,
``any`` -> string, which is also how its checker reads ``any``) and the chat template writes its own
tool preamble; no BFCL system prompt is added, and a system message in the question stays as it is. Java
and JavaScript parameters are offered as strings of source code with BFCL's hints in their descriptions.
Function names keep their dots and must be called exactly so.

Scoring (``check``): BFCL's AST rules, see ``bfcl_check``; irrelevance categories are correct when no call
is made, ``live_relevance`` when at least one is.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .bfcl_check import PYTHON_TYPES, calls_problem
from .bfcl_values import JAVA_TYPES, JS_TYPES, write_java, write_js
from .errors import KitError

MODULE = "bfcl_eval"
INSTALL = "pip install --no-deps bfcl-eval==2026.3.23"
WHEEL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
              "irrelevance", "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
              "live_irrelevance", "live_relevance")
WANTS_CALL = {"irrelevance": False, "live_irrelevance": False, "live_relevance": True}  # no possible answers
# sha256 of each file used: question file, then its possible answers
PINS = {
    "simple_python": ("82dd63ba502eb2520c6b5d1d9a5c4b590e03ff261565175561f6228a367d1991",
                      "90cd5bc653690ee8e459b5b3f3fc9458606f7f3fcbf795bb51b7dc581f8c86dc"),
    "simple_java": ("13d2303a125b08754f0e41995b9273b5005fa8ed8ebfaa24ef53b4d83c4b5c6e",
                    "78f25616084044fa05bbfcee68e03f6ececb222bdd5cb3b7783a675fb3366e35"),
    "simple_javascript": ("329e67fedf79a6243d93dbda4b388d12bd2d31f1f2163d92cb6ef676d1764f44",
                          "e2f9f2e51d88e0c8056ffbf1a3dd3d02eb032532d2b5d98c9cc9003385bdd56b"),
    "multiple": ("aef168155ebd74b7ac2401198b201343bc7d16d7a3d7e0d4e6d8ee82c6969b2a",
                 "244e00ce9395df948bcafc7bee64e8f9c87ef70887587d83cae45b13699f3047"),
    "parallel": ("19f51a82eff42e5d62541aa500115a056eb78f437c2ba1f10415fd7c8e5dda84",
                 "8a6aa19c1adddc6a5a2f7e40f9dbf30cc7e95815e7b830c90589ab318229e0f0"),
    "parallel_multiple": ("8863ea8433239f55c5f016154cf0830853c89f693c6ea270396a2fa121960579",
                          "5ebf24f458c1f16300c05505d83d6f0a1b68b79be273a033febd0d4f840507e3"),
    "irrelevance": ("2b6ed4c2e992cdcf5f1678a701851f944bef7550ee026ed1ddb89efed5be01a6", None),
    "live_simple": ("1af2ac87dca47556db7b7e37e51e28b459a38b594e3c7b3c792b4903598ca0c4",
                    "fec9cfa9744a936f9126981e85a2023da1e63e273eafebc81923a1162fad70ce"),
    "live_multiple": ("fd8ccfad4d911420d0e3341dbe2fff77d1d341da934248b9bb2bda24ab3a10c8",
                      "97e90d59c5bd76c55a2920ce93e5566e9046307d3f558578f085f9d3a56c3084"),
    "live_parallel": ("6c26e9fdc3350cf596e6d1ea9c179cbff834761bccf562f4141ed29a839ca421",
                      "8a9f189ff0e832ebbbbdade1fd95a7dbcc67406e9177df3f0aad76f59ab00350"),
    "live_parallel_multiple": ("21d4b9319c1faac431e22757b367ea28917fe467364c3a4b17f16ec06d4f6e79",
                               "f5b5f360556c5feb51db46fb9f56ee4b304f4b45b161599bbb14161c98a2873f"),
    "live_irrelevance": ("6559fda2beaceb609a2cd2e504c65b4a56cb448e1ef88fddfd199e163d163349", None),
    "live_relevance": ("e03f9e241657a137cba48a89ee12f47bf3fcb7e4f6274263e9c699a0c974203a", None),
}
_HINTS = {"python": " Note that the provided function is in Python 3 syntax.",
          "java": " Note that the provided function is in Java 8 SDK syntax.",
          "javascript": " Note that the provided function is in JavaScript syntax."}
_SCHEMA_TYPES = {**{k: "string" for k in ("string", "any", "char", "String", "Any")},
                 **{k: "integer" for k in ("integer", "byte", "short", "long", "Bigint")},
                 **{k: "number" for k in ("float", "double", "number")}, "boolean": "boolean", "bool": "boolean",
                 **{k: "array" for k in ("array", "list", "tuple", "ArrayList", "Array", "Queue", "Stack")},
                 **{k: "object" for k in ("dict", "object", "HashMap", "Hashtable")}}


@dataclass(frozen=True)
class Item:
    id: str
    category: str
    messages: list[dict]     # the question's (only) turn, as chat messages
    tools: list[dict]        # the functions as OpenAI-style tools, what the model is shown
    functions: list[dict]    # BFCL's own function docs (its type names), what check() reads
    answers: list[dict] | None  # [{function: {param: [possible values]}}, ...]; None for (ir)relevance


@dataclass(frozen=True)
class Check:
    correct: bool
    reason: str


def language_of(category: str) -> str:
    return {"simple_java": "java", "simple_javascript": "javascript"}.get(category, "python")


def load(category: str, limit: int | None = None, ids: list[str] | None = None,
         source: str | Path | None = None) -> list[Item]:
    """The items of one BFCL category, in BFCL's order (``ids`` keeps only those, ``limit`` the first n)."""
    if category not in CATEGORIES:
        raise KitError(f"{category!r} is not a BFCL single-turn category this kit scores.",
                       f"Use one of: {', '.join(CATEGORIES)}.")
    where = None if source is None else str(source)
    questions = _json_lines(where, category, 0)
    answers = None if category in WANTS_CALL else {a["id"]: a["ground_truth"] for a in _json_lines(where, category, 1)}
    if ids is not None:
        wanted = set(ids)
        if unknown := sorted(wanted - {q["id"] for q in questions}):
            raise KitError(f"BFCL {category} has no item {', '.join(unknown[:5])}.",
                           f"Use ids of that category, e.g. {questions[0]['id']!r}.")
        questions = [q for q in questions if q["id"] in wanted]
    language = language_of(category)
    return [Item(q["id"], category, q["question"][0], [to_tool(f, language) for f in q["function"]],
                 q["function"], None if answers is None else answers[q["id"]])
            for q in questions[:limit]]


def prompt_messages(item: Item) -> dict:
    """``apply_chat_template``'s ``conversation`` and ``tools`` for an item (fresh copies)."""
    return {"conversation": copy.deepcopy(item.messages), "tools": copy.deepcopy(item.tools)}


def check(item: Item, calls: list) -> Check:
    """Whether ``calls`` (toolcalls.Call objects, or {"name", "arguments"} dicts) answer the item."""
    pairs = [(c["name"], c.get("arguments", {})) if isinstance(c, dict) else (c.name, c.arguments) for c in calls]
    if item.category in WANTS_CALL:
        if WANTS_CALL[item.category]:
            return Check(bool(pairs), "a call was made" if pairs else "no call on a relevance item")
        made = ", ".join(name for name, _ in pairs)
        return Check(not pairs, f"a call on an irrelevance item ({made})" if pairs else "no call, as wanted")
    assert item.answers is not None
    problem = calls_problem(item.functions, pairs, item.answers, language_of(item.category),
                            parallel="parallel" in item.category)
    return Check(problem is None, problem or "matches a possible answer")


def reference_calls(item: Item) -> list[dict]:
    """A correct answer: each answer's first possible value per parameter, left out where that is "" (a
    required parameter gets its first other value, else ""; one the function lacks is left out)."""
    if item.answers is None:
        if WANTS_CALL[item.category]:
            raise KitError(f"{item.id} has no possible answers (any call counts).", "Check it with any call.")
        return []
    language, calls = language_of(item.category), []
    for answer in item.answers:
        name, options = next(iter(answer.items()))
        schema = next(f for f in item.functions if f["name"] == name)["parameters"]
        arguments = {}
        for param, values in options.items():
            required = param in schema.get("required", [])
            value = next((v for v in values if v != ""), "") if required else (values or [""])[0]
            if param in schema["properties"] and (required or value != ""):
                arguments[param] = _first_value(value, schema["properties"][param], language)
        calls.append({"name": name, "arguments": arguments})
    return copy.deepcopy(calls)  # the item's answers stay as they are whatever the caller does


def _first_value(value, schema: dict, language: str):
    declared, item_declared = schema.get("type", ""), schema.get("items", {}).get("type")
    want = {"python": PYTHON_TYPES, "java": JAVA_TYPES, "javascript": JS_TYPES}[language].get(declared, str)
    if want is dict and isinstance(value, dict):
        value = _first_dict(value)
    elif want is list and item_declared == "dict" and isinstance(value, list):
        value = [_first_dict(v) if isinstance(v, dict) else v for v in value]
    if language == "java":
        return write_java(value, declared, item_declared)
    return write_js(value, declared, item_declared) if language == "javascript" else value


def _first_dict(template: dict) -> dict:
    firsts = {k: v[0] if isinstance(v, list) and v else v for k, v in template.items()}
    return {k: v for k, v in firsts.items() if v != ""}


# --- tools ------------------------------------------------------------------------------------------

def to_tool(function: dict, language: str = "python") -> dict:
    """One BFCL function doc as an OpenAI-style tool, converted as BFCL converts it for FC models."""
    parameters = dict(function["parameters"])
    convert = _python_schema if language == "python" else functools.partial(_source_string, language=language)
    parameters.update(type="object", properties={k: convert(v) for k, v in parameters["properties"].items()})
    return {"type": "function", "function": {"name": function["name"],
            "description": function.get("description", "") + _HINTS[language], "parameters": parameters}}


def _python_schema(prop: dict, hinted: bool = True) -> dict:
    out = dict(prop, type=_SCHEMA_TYPES.get(prop.get("type", ""), "string"))
    if hinted and prop.get("type") == "float":
        out.update(format="float", description=prop.get("description", "") + " This is a float type value.")
    if "properties" in prop:
        out["properties"] = {k: _python_schema(v) for k, v in prop["properties"].items()}
    if "items" in prop:
        out["items"] = _python_schema(prop["items"], hinted=False)
    return out


def _source_string(prop: dict, language: str) -> dict:
    """A Java / JavaScript parameter, offered as a string of source code with BFCL's hints."""
    out, kind = dict(prop, type="string"), prop.get("type", "")
    lang = "Java" if language == "java" else "JavaScript"
    text = out.get("description", "") + (f" This parameter can be of any type of {lang} object in string "
                                          "representation." if kind == "any" else
                                          f" This is {lang} {kind} type parameter in string representation.")
    if kind in ("ArrayList", "Array", "array") and "items" in out:
        text += f" The list elements are of type {out.pop('items').get('type')}; they are not in string representation."
    if language == "javascript" and kind == "dict" and "properties" in out:
        text += (" The dictionary entries have the following schema; they are not in string representation. "
                 + json.dumps(out.pop("properties")))
    out["description"] = text
    return out


# --- data -------------------------------------------------------------------------------------------

def _json_lines(source: str | None, category: str, which: int) -> list[dict]:
    name = ("" if which == 0 else "possible_answer/") + f"BFCL_v4_{category}.json"
    raw = _pinned(source, name, PINS[category][which])
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


@functools.lru_cache(maxsize=32)
def _pinned(source: str | None, name: str, sha256: str) -> bytes:
    raw = _read(source, name)
    if hashlib.sha256(raw).hexdigest() != sha256:
        raise KitError(f"BFCL data file {name} ({source or 'installed ' + MODULE}) is not the pinned one "
                       f"(sha256 {hashlib.sha256(raw).hexdigest()[:16]}..., want {sha256[:16]}...).",
                       f"Install the pinned release: {INSTALL} (or pass source= that release's wheel or data).")
    return raw


def _read(source: str | None, name: str) -> bytes:
    if source is None:
        try:
            spec = importlib.util.find_spec(MODULE)
        except (ImportError, ValueError):  # a stand-in module without a spec
            spec = None
        if spec is None or not spec.submodule_search_locations:
            raise KitError(f"BFCL's data package ({MODULE}) is not installed.",
                           f"{INSTALL} (--no-deps: only its data files are read; its SDK dependencies are not "
                           "needed), or pass source= a bfcl_eval data folder or the wheel file.")
        return _from_folder(Path(list(spec.submodule_search_locations)[0]) / "data", name)
    path = Path(source)
    if path.is_file():
        return _from_wheel(path, name)
    if path.is_dir():
        return _from_folder(path / "data" if (path / "data" / "possible_answer").is_dir() else path, name)
    raise KitError(f"BFCL data source {source} does not exist.",
                   f"Pass a bfcl_eval data folder or the bfcl-eval 2026.3.23 wheel, or leave it out after {INSTALL}.")


def _from_folder(folder: Path, name: str) -> bytes:
    try:
        return (folder / name).read_bytes()
    except OSError as e:
        raise KitError(f"BFCL data file {folder / name} cannot be read ({e.strerror}).",
                       f"Point source= at bfcl_eval's data folder, or reinstall: {INSTALL}.") from e


@functools.lru_cache(maxsize=4)
def _wheel_ok(path: Path) -> bool:
    return hashlib.sha256(path.read_bytes()).hexdigest() == WHEEL_SHA256


def _from_wheel(path: Path, name: str) -> bytes:
    if not _wheel_ok(path.resolve()):
        raise KitError(f"{path} is not the bfcl-eval 2026.3.23 wheel (its sha256 is not {WHEEL_SHA256[:16]}...).",
                       f"Download that release (pip download --no-deps bfcl-eval==2026.3.23) or {INSTALL}.")
    with zipfile.ZipFile(path) as wheel:
        return wheel.read(f"{MODULE}/data/{name}")
