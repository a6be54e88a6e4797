"""BFCL single-turn scoring against BFCL's own data (the pinned bfcl-eval 2026.3.23 package, installed with
``pip install --no-deps``): every item's first possible answer scores correct, also after a trip through
each family's chat template and parser; wrong calls fail with their reason; bad data is refused.
Run with ``-s`` to see the per-category counts.
"""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import jsonschema
import pytest
import trl
from transformers.utils.chat_template_utils import render_jinja_template

from mcp_server.evals.kit import bfcl
from mcp_server.evals.kit.bfcl import check as verdict
from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.toolcalls import Call, family_of, parse, render_assistant

SIZES = {"simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200, "parallel": 200,
         "parallel_multiple": 200, "irrelevance": 240, "live_simple": 258, "live_multiple": 1053,
         "live_parallel": 16, "live_parallel_multiple": 24, "live_irrelevance": 884, "live_relevance": 16}
SCORED = [c for c in bfcl.CATEGORIES if c not in bfcl.WANTS_CALL]
# Items no sensible answer passes, under BFCL's checker as under ours (its checker rejects these reference
# answers too): id -> (what our reason says, why).
UNSATISFIABLE = {
    "simple_java_36": ("value not allowed for 'parts'", "an ArrayList of `any` is read as strings; the answer "
                       "holds the number 42 and true"),
    "simple_java_65": ("value not allowed for 'params'", "the same, with true"),
    "simple_java_64": ("value not allowed for 'meta'['format']", "a dict entry's possible values are a bare "
                       "string, so they are compared one character at a time"),
    "live_simple_106-63-0": ("wrong type for 'auto_loan_payment_start'", "required parameters with no possible "
                             "value at all ([])"),
    "live_simple_112-68-0": ("wrong type for 'acc_routing_start'", "the same"),
    "live_multiple_862-181-3": ("missing argument 'journey_start_time'", "the answer needs a parameter its "
                                "function does not have"),
    "live_multiple_964-207-0": ("missing required argument 'statement'", "the answer names 'question' for the "
                                "function's one parameter 'statement'"),
}
TRL_DIR = Path(trl.__file__).parent / "chat_templates"
TEMPLATES = {n: (TRL_DIR / f"{n}.jinja").read_text(encoding="utf-8") for n in ("qwen3", "llama3_2", "gemma4_v5")}


def sample(category: str, n: int = 30) -> list[bfcl.Item]:
    items = bfcl.load(category)
    return items[::max(1, len(items) // n)][:n]


def one(category: str, item_id: str) -> bfcl.Item:
    return bfcl.load(category, ids=[item_id])[0]


def test_categories_load_with_their_sizes_and_shapes():
    for category, size in SIZES.items():
        items = bfcl.load(category)
        assert len(items) == size and len({i.id for i in items}) == size, category
        assert all((i.answers is None) == (category in bfcl.WANTS_CALL) for i in items), category
        assert all(i.messages and i.messages[-1]["role"] == "user" for i in items), category
        assert all(len(i.tools) == len(i.functions) for i in items), category
    assert [i.id for i in bfcl.load("parallel", limit=3)] == ["parallel_0", "parallel_1", "parallel_2"]
    assert [i.id for i in bfcl.load("multiple", ids=["multiple_7", "multiple_2"])] == ["multiple_2", "multiple_7"]


JSON_TYPES = {"object", "array", "string", "number", "integer", "boolean"}


def schema_types(schema: dict) -> set[str]:
    """Every ``type`` in a JSON Schema, nested ones included."""
    found = {schema["type"]} if "type" in schema else set()
    for child in [*schema.get("properties", {}).values(), *([schema["items"]] if "items" in schema else [])]:
        found |= schema_types(child)
    return found


def test_tools_are_json_schema_converted_as_bfcl_does():
    meta = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
    for category in bfcl.CATEGORIES:
        for item in bfcl.load(category):
            for tool in item.tools:
                parameters = tool["function"]["parameters"]
                assert tool["type"] == "function" and parameters["type"] == "object", item.id
                assert schema_types(parameters) <= JSON_TYPES, item.id
        for item in sample(category, 10):  # the full meta-schema check is slow: a sample
            for tool in item.tools:
                meta.validate(tool["function"]["parameters"])
    python = one("simple_python", "simple_python_200").tools[0]["function"]
    assert python["name"] == "calculate_emissions" and python["description"].endswith("Python 3 syntax.")
    assert python["parameters"]["properties"]["fuel_efficiency"]["type"] == "number"
    assert python["parameters"]["properties"]["distance"]["type"] == "integer"
    java = one("simple_java", "simple_java_22").tools[0]["function"]["parameters"]["properties"]
    assert {p["type"] for p in java.values()} == {"string"}  # Java and JavaScript values are source code
    assert "ArrayList type parameter in string representation" in java["ids"]["description"]
    assert "items" not in java["ids"] and "elements are of type long" in java["ids"]["description"]


def test_first_possible_answers_score_correct():
    counts = {}
    for category in SCORED:
        items = bfcl.load(category)
        verdicts = {i.id: bfcl.check(i, bfcl.reference_calls(i)) for i in items}
        wrong = {k: v.reason for k, v in verdicts.items() if not v.correct}
        assert set(wrong) == {k for k in UNSATISFIABLE if k in verdicts}, (category, wrong)
        for item_id, reason in wrong.items():
            assert reason.startswith(UNSATISFIABLE[item_id][0]), (item_id, reason)
        counts[category] = f"{len(items) - len(wrong)}/{len(items)}"
    print("\nreference answers correct:", counts)


def as_message_text(template: str, calls: list[Call], tools: list[dict]) -> str:
    """What a model of this template writes for ``calls``. The stock Llama templates take one call per
    message, so there each call is rendered alone and the JSON objects are joined by newlines, the form
    Llama models write several calls in (and the form toolcalls.parse reads)."""
    if family_of(template) != "llama3":
        return render_assistant(template, calls, tools=tools)
    return "\n".join(render_assistant(template, [c], tools=tools).split("<|eot_id|>")[0] for c in calls)


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_answers_survive_each_template_and_parser(name):
    template, family = TEMPLATES[name], family_of(TEMPLATES[name])
    assert family
    for category in SCORED:
        for item in sample(category):
            calls = [Call(c["name"], c["arguments"]) for c in bfcl.reference_calls(item)]
            parsed = parse(family, as_message_text(template, calls, item.tools))
            verdict = bfcl.check(item, parsed.calls)
            assert parsed.well_formed and verdict.correct == (item.id not in UNSATISFIABLE), (item.id, verdict)


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_prompts_render_with_each_template(name):
    for category in bfcl.CATEGORIES:
        for item in sample(category, 10):
            prompt = bfcl.prompt_messages(item)
            text = render_jinja_template([prompt["conversation"]], tools=prompt["tools"],
                                         chat_template=TEMPLATES[name], add_generation_prompt=True,
                                         bos_token="", eos_token="", date_string="26 Jul 2024")[0][0]
            assert all(f["name"] in text for f in item.functions), item.id
            assert item.messages[-1]["content"].strip()[:40] in text, item.id
    item = one("live_simple", bfcl.load("live_simple")[0].id)
    bfcl.prompt_messages(item)["conversation"].append({"role": "user", "content": "changed"})
    assert len(bfcl.prompt_messages(item)["conversation"]) == len(item.messages)  # copies


def test_hand_made_calls_pass_or_fail_with_their_reason():
    tri = one("simple_python", "simple_python_0")  # calculate_triangle_area(base=10, height=5, unit='units'?)
    good = {"base": 10, "height": 5}
    assert verdict(tri, [Call("calculate_triangle_area", good)]).correct
    assert verdict(tri, [{"name": "calculate_triangle_area", "arguments": {**good, "unit": "UNITS"}}]).correct
    cases = {
        "wrong function name 'triangle_area'": [Call("triangle_area", good)],
        "missing required argument 'height'": [Call("calculate_triangle_area", {"base": 10})],
        "unexpected argument 'colour'": [Call("calculate_triangle_area", {**good, "colour": "red"})],
        "wrong type for 'base'": [Call("calculate_triangle_area", {**good, "base": "10"})],
        "value not allowed for 'base'": [Call("calculate_triangle_area", {**good, "base": 11})],
        "wrong number of calls: 2 made, 1 expected": [Call("calculate_triangle_area", good)] * 2,
    }
    for reason, calls in cases.items():
        got = verdict(tri, calls)
        assert not got.correct and got.reason.startswith(reason), (reason, got)
    assert verdict(tri, [Call("calculate_triangle_area", {**good, "base": True})]).reason.startswith("wrong type")

    emissions = one("simple_python", "simple_python_200")  # fuel_efficiency is a float: an int passes
    args = {"distance": 12000, "fuel_type": "Gas", "fuel_efficiency": 25}
    assert verdict(emissions, [Call("calculate_emissions", args)]).correct

    songs = one("parallel", "parallel_0")  # spotify.play twice: any order, each call used once
    taylor, maroon = Call("spotify.play", {"artist": "Taylor Swift", "duration": 20}), \
        Call("spotify.play", {"artist": "Maroon 5", "duration": 15})
    assert verdict(songs, [maroon, taylor]).correct
    assert verdict(songs, [taylor]).reason == "wrong number of calls: 1 made, 2 expected"
    assert verdict(songs, [taylor, taylor]).reason.startswith("no call matches expected call 2 (spotify.play)")

    irrelevant = bfcl.load("irrelevance", limit=1)[0]
    assert verdict(irrelevant, []).correct
    assert verdict(irrelevant, [Call("calculate_triangle_area", good)]).reason.startswith("a call on an irrelevance")
    relevant = bfcl.load("live_relevance", limit=1)[0]
    assert verdict(relevant, []).reason == "no call on a relevance item"
    assert verdict(relevant, [Call(relevant.functions[0]["name"], {})]).correct


def test_java_and_javascript_values_are_source_strings():
    java = one("simple_java", "simple_java_25")  # id is a Java long: written 42L
    call = bfcl.reference_calls(java)[0]
    assert call["arguments"]["id"] == "42L" and verdict(java, [call]).correct
    for value, reason in (("42", "wrong type for 'id'"), (42, "wrong type for 'id': java values are given as strings")):
        got = verdict(java, [{"name": call["name"], "arguments": {**call["arguments"], "id": value}}])
        assert got.reason.startswith(reason), got
    js = one("simple_javascript", "simple_javascript_17")
    call = bfcl.reference_calls(js)[0]
    assert call["arguments"]["priorityLevel"] == "3" and verdict(js, [call]).correct
    wrong = {**call["arguments"], "priorityLevel": 3}
    assert verdict(js, [{"name": call["name"], "arguments": wrong}]).reason.startswith("wrong type for 'priorityLevel'")


# --- the data source ---------------------------------------------------------------------------------

def data_folder() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("bfcl_eval")
    assert spec and spec.submodule_search_locations
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def copy_category(to: Path, category: str) -> Path:
    (to / "possible_answer").mkdir(parents=True)
    for name in (f"BFCL_v4_{category}.json", f"possible_answer/BFCL_v4_{category}.json"):
        shutil.copy(data_folder() / name, to / name)
    return to


def test_a_missing_package_is_refused_with_the_install_command(monkeypatch):
    monkeypatch.setattr(bfcl, "MODULE", "bfcl_eval_not_installed_here")
    bfcl._pinned.cache_clear()
    with pytest.raises(KitError) as e:
        bfcl.load("simple_python")
    assert "not installed" in e.value.problem and bfcl.INSTALL in e.value.fix
    bfcl._pinned.cache_clear()


def test_a_data_folder_loads_and_a_changed_file_is_refused(tmp_path):
    folder = copy_category(tmp_path / "data", "simple_python")
    assert [i.answers for i in bfcl.load("simple_python", source=folder)] == \
        [i.answers for i in bfcl.load("simple_python")]
    answers = folder / "possible_answer/BFCL_v4_simple_python.json"
    answers.write_text(answers.read_text().replace('"base": [10]', '"base": [11]'))
    other = shutil.copytree(folder, tmp_path / "changed")  # a new path: nothing cached for it
    with pytest.raises(KitError) as e:
        bfcl.load("simple_python", source=other)
    assert "is not the pinned one" in e.value.problem and bfcl.INSTALL in e.value.fix
    with pytest.raises(KitError) as e:
        bfcl.load("multiple", source=other)  # a file the folder lacks
    assert "cannot be read" in e.value.problem
    with pytest.raises(KitError):
        bfcl.load("simple_python", source=tmp_path / "nowhere")
    with pytest.raises(KitError) as e:
        bfcl.load("multi_turn_base")
    assert "simple_python" in e.value.fix


def test_a_wheel_is_read_only_when_it_is_the_pinned_one(tmp_path, monkeypatch):
    wheel = tmp_path / "bfcl_eval-2026.3.23-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name in ("BFCL_v4_parallel.json", "possible_answer/BFCL_v4_parallel.json"):
            z.write(data_folder() / name, f"bfcl_eval/data/{name}")
    with pytest.raises(KitError) as e:
        bfcl.load("parallel", source=wheel)
    assert "is not the bfcl-eval 2026.3.23 wheel" in e.value.problem
    monkeypatch.setattr(bfcl, "WHEEL_SHA256", hashlib.sha256(wheel.read_bytes()).hexdigest())
    bfcl._wheel_ok.cache_clear()
    assert [i.answers for i in bfcl.load("parallel", source=wheel)] == [i.answers for i in bfcl.load("parallel")]
    bfcl._wheel_ok.cache_clear()
