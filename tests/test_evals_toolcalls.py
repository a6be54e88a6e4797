"""The tool-call parsers against the templates themselves: every shipped template renders a set of calls,
and parsing its text gives back the same names, arguments (compared as JSON) and text.

Templates: TRL's stock qwen3, llama3_1, llama3_2, gemma4, gemma4_v2..v5 and every tunepack template in
templates/chat. Run with ``-s`` to see the per-template table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trl

from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.toolcalls import FAMILIES, Call, family_of, parse, render_assistant
from mcp_server.resources import chat_templates

TRL_DIR = Path(trl.__file__).parent / "chat_templates"
STOCK = ("qwen3", "llama3_1", "llama3_2", "gemma4", "gemma4_v2", "gemma4_v3", "gemma4_v4", "gemma4_v5")
TEMPLATES = {**{f"trl/{n}": (TRL_DIR / f"{n}.jinja").read_text(encoding="utf-8") for n in STOCK},
             **{f"tunepack/{n}": text for n, text in chat_templates().items()}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]

NESTED = {"filter": {"tags": ["a", "b, c", ""], "range": {"lo": -1, "hi": 2.5}, "empty": {}, "none": [None, True]},
          "rows": [{"k": "v"}, {"k2": [1, [2, [3]]]}, []]}
# name -> (calls, content)
CASES = {
    "one call": ([Call("get_weather", {"city": "Paris"})], ""),
    "hard strings": ([Call("search", {
        "q": 'a, b: "c" {d} [e] \'f\' ;g', "multi": "line one\nline two\n\ttabbed", "uni": "naïve 東京 — 🚀",
        "slash": "C:\\path\\to\\x", "empty": "", "json_like": '{"name": "x", "arguments": {}}'})], ""),
    "scalars": ([Call("set", {"zero": 0, "neg": -7, "big": 2**53 + 1, "f": 2.5, "negf": -0.125, "tiny": 1e-05,
                              "yes": True, "no": False, "nothing": None})], ""),
    "nested": ([Call("query", NESTED)], ""),
    "no arguments": ([Call("ping", {})], ""),
    "dotted name": ([Call("math.factorial", {"n": 5})], ""),
    "two calls": ([Call("get_weather", {"city": "Paris"}), Call("get_time", {"zone": "Europe/Paris, CET"})], ""),
    "call and text": ([Call("get_weather", {"city": "Oslo"})], "Let me look that up, one moment."),
    "text only": ([], "The answer is 4: two plus two."),
}


def family(name: str) -> str:
    found = family_of(TEMPLATES[name])
    assert found in FAMILIES, name
    return found


def expected(name: str, case: str) -> tuple[str, list[Call], str] | str:
    """(what the template keeps: calls, content) or the word saying what the template does instead."""
    calls, content = CASES[case]
    if family(name) == "llama3":
        if len(calls) > 1:
            return "refused"  # the stock Llama 3.1/3.2 templates take one call per message
        if calls:
            content = ""  # and do not write a tool-calling message's text
    return "ok", calls, content


def as_json(calls: list[Call]) -> str:
    return json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True)


def round_trip(name: str, case: str, **kwargs) -> str:
    """'ok', 'refused' (the template raised as expected), or what went wrong."""
    want = expected(name, case)
    calls, content = CASES[case]
    try:
        text = render_assistant(TEMPLATES[name], calls, content, tools=TOOLS, **kwargs)
    except KitError as e:
        return "refused" if want == "refused" else f"render failed: {e}"
    if want == "refused":
        return f"the template wrote several calls: {text!r}"
    got = parse(family(name), text)
    _, want_calls, want_content = want
    if not got.well_formed or as_json(got.calls) != as_json(want_calls) or got.content != want_content:
        return f"mismatch: {text!r} -> {got}"
    return "ok"


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_case_round_trips(name):
    outcomes = {case: round_trip(name, case) for case in CASES}
    assert all(v in ("ok", "refused") for v in outcomes.values()), outcomes
    assert (outcomes["two calls"] == "refused") == (family(name) == "llama3")


def test_round_trip_table():
    rows = []
    for name in TEMPLATES:
        outcomes = [round_trip(name, case) for case in CASES]
        rows.append((name, family(name), sum(o == "ok" for o in outcomes), sum(o == "refused" for o in outcomes)))
    print(f"\n{'template':<22}{'family':<8} ok  refused(expected)  of {len(CASES)}")
    for name, fam, ok, refused in rows:
        print(f"{name:<22}{fam:<8}{ok:>3}  {refused:>3}")
    assert all(ok + refused == len(CASES) for *_, ok, refused in rows)
    assert len(rows) == 15


@pytest.mark.parametrize("name", ["trl/llama3_1", "tunepack/llama3_1"])
def test_llama31_builtin_tool_call_round_trips(name):
    call = Call("brave_search", {"query": "weather in Paris, \"today\""})
    text = render_assistant(TEMPLATES[name], [call], builtin_tools=["brave_search"])
    assert text.startswith("<|python_tag|>brave_search.call(") and text.endswith("<|eom_id|>")
    assert parse("llama3", text).calls == [call]


def test_llama_drops_the_text_of_a_calling_message():
    text = render_assistant(TEMPLATES["trl/llama3_2"], *CASES["call and text"])
    assert "Let me look" not in text and parse("llama3", text).calls == CASES["call and text"][0]


# --- malformed and plain messages ------------------------------------------------------------------

GOOD = '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'


@pytest.mark.parametrize("family_, text, calls, error", [
    ("hermes", '<tool_call>\n{"name": "f", "arguments": {"a": 1}}', 0, "never closed by </tool_call>"),
    ("hermes", '<tool_call>\n{"name": "f", "arguments": {"a": 1}\n</tool_call>', 0, "not valid JSON"),
    ("hermes", '<tool_call>\n{"arguments": {"a": 1}}\n</tool_call>', 0, 'no "name"'),
    ("hermes", '<tool_call>\n{"name": "f", "arguments": [1]}\n</tool_call>', 0, "not a JSON object"),
    ("hermes", GOOD + "\n<tool_call>\n{oops}\n</tool_call>", 1, "tool call 2: not valid JSON"),
    ("llama3", '{"name": "f", "parameters": {"a": 1}', 0, "not a JSON call"),
    ("llama3", '{"name": "f", "parameters": {"a": 1}} and then I said', 1, "tool call 2 is not a JSON call"),
    ("llama3", "<|python_tag|>print('hi')", 0, "neither a JSON call"),
    ("llama3", '{"name": "f", "parameters": "not json"}', 0, "not a JSON call"),
    ("llama3", '{"name": "Bob", "age": 3}', 0, 'has no "parameters"'),
    ("gemma4", '<|tool_call>call:f{a:<|"|>x<|"|>}', 0, "never closed by <tool_call|>"),
    ("gemma4", '<|tool_call>call:f{a:<|"|>x}<tool_call|>', 0, "never closed"),
    ("gemma4", "<|tool_call>call:f{a:Paris}<tool_call|>", 0, "unquoted value 'Paris'"),
    ("gemma4", "<|tool_call>call:f{a:1,b:[1,2}<tool_call|>", 0, "expected ',' or ']'"),
    ("gemma4", "<|tool_call>call:f{a:1} extra<tool_call|>", 0, "unexpected text after the arguments"),
    ("gemma4", "<|tool_call>f{a:1}<tool_call|>", 0, "expected call:NAME{...}"),
    ("gemma4", "<|tool_call>call:f{a:1,<tool_call|>", 0, "a key is missing"),
    ("gemma4", "<|tool_call>call:g{}<tool_call|><|tool_call>call:f{a}<tool_call|>", 1, "expected ':' after the key"),
])
def test_malformed_calls_are_flagged(family_, text, calls, error):
    got = parse(family_, text)
    assert not got.well_formed and error in (got.error or ""), got
    assert len(got.calls) == calls


@pytest.mark.parametrize("family_, text", [
    ("hermes", "Paris is the capital of France."),
    ("hermes", "<think>\nThe user wants a fact.\n</think>\n\nParis.<|im_end|>\n"),
    ("llama3", "Paris is the capital of France.<|eot_id|>"),
    ("llama3", '{"answer": 42, "unit": "km"}'),  # JSON, but not a call
    ("llama3", "Use the format {name: ..., parameters: ...} to call."),
    ("gemma4", "Paris is the capital of France.<turn|>\n"),
    ("gemma4", "A closer alone <tool_call|> is just text."),
])
def test_plain_answers_are_well_formed_with_no_calls(family_, text):
    got = parse(family_, text)
    assert got.well_formed and got.calls == [] and got.content, got


def test_reasoning_and_trailing_tokens():
    got = parse("hermes", "<think>\nI will call f.\n</think>\n\n" + GOOD + "<|im_end|>\n<|endoftext|>")
    assert (got.reasoning, got.content, got.calls) == ("I will call f.", "", [Call("f", {"a": 1})])
    assert parse("hermes", "prefilled opener\n</think>\n\nHi.").reasoning == "prefilled opener"  # <think> was in the prompt
    assert parse("hermes", "<think>\nstill thinking").content == ""
    assert parse("hermes", GOOD + " then a stray </think>").calls == [Call("f", {"a": 1})]
    got = parse("gemma4", "<|channel>thought\nHmm.<channel|>" + "<|tool_call>call:f{a:1}<tool_call|><|tool_response>x")
    assert (got.reasoning, got.calls, got.content) == ("Hmm.", [Call("f", {"a": 1})], "")
    got = parse("llama3", '<|python_tag|>{"name": "f", "arguments": {"a": 1}};\n{"name": "g", "parameters": {}}<|eom_id|>')
    assert got.well_formed and got.calls == [Call("f", {"a": 1}), Call("g", {})]
    assert parse("llama3", '[{"name": "f", "parameters": {"a": 1}}]').calls == [Call("f", {"a": 1})]


def test_gemma_values_beyond_what_templates_write():
    got = parse("gemma4", '<|tool_call>call:f{ <|"|>q k<|"|> : "json \\"s\\"" , b : [ true , None ] }<tool_call|>')
    assert got.calls == [Call("f", {"q k": 'json "s"', "b": [True, None]})], got


def test_family_of_reads_the_template():
    assert {n: family(n) for n in TEMPLATES} == {
        n: ("hermes" if "qwen" in n else "llama3" if "llama" in n else "gemma4") for n in TEMPLATES}
    for other in ("qwen3_5_think", "llama3", "gptoss", "glm4moe", "phi3"):  # XML calls, no calls, other syntaxes
        assert family_of((TRL_DIR / f"{other}.jinja").read_text(encoding="utf-8")) is None, other
    assert family_of((TRL_DIR / "qwen2_5.jinja").read_text(encoding="utf-8")) == "hermes"
    with pytest.raises(KitError, match="Unknown tool-call family"):
        parse("mistral", "")
