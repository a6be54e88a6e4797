"""tunepack's training chat templates (templates/chat) against the stock templates they replace, and the
recognition that picks one for ``chat_template: model``.

Equality is checked on rendered text: for every template, a battery of conversations (system prompts,
several tool calls, tool results, thinking, multi-turn, odd argument values, dangling calls) gives
byte-for-byte the text of the stock template (or the same error). The markers are checked by listing
exactly which characters the template marks as the model's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trl
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast
from transformers.utils.chat_template_utils import render_jinja_template

from mcp_server.resources import chat_templates
from mcp_server.train import chat_templates as ct
from mcp_server.train import maskcheck as mc

TRL = Path(trl.__file__).parent / "chat_templates"
OURS = chat_templates()
TOOLS = [
    {"type": "function", "function": {"name": "bash", "description": "Run a shell command.", "parameters": {
        "type": "object", "properties": {"command": {"type": "string", "description": "The command."},
                                         "timeout": {"type": "integer", "description": "Seconds.", "nullable": True}},
        "required": ["command"]}}},
    {"type": "function", "function": {"name": "edit", "description": "Edit a file.", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {
            "type": "object", "properties": {"old": {"type": "string"}, "new": {"type": "string"}}}},
            "options": {"type": "object", "properties": {"dry_run": {"type": "boolean"}}}},
        "required": ["path", "edits"]}}},
]


def call(name, arguments, call_id):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool(call_id, name, content):
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


SYSTEM = {"role": "system", "content": "  You are a careful coding agent.\n"}
ONE_CALL = [SYSTEM, {"role": "user", "content": "Run the tests."},
            {"role": "assistant", "content": "Running them now.", "tool_calls": [call("bash", {"command": "pytest -q"}, "a")]},
            tool("a", "bash", "3 passed"), {"role": "assistant", "content": "All 3 tests pass."}]
TWO_CALLS = [SYSTEM, {"role": "user", "content": "Fix the bug in app.py"},
             {"role": "assistant", "content": "", "reasoning_content": "Read it, then test.", "tool_calls": [
                 call("bash", {"command": "cat app.py", "timeout": 30}, "b1"),
                 call("edit", {"path": "app.py", "edits": [{"old": "x = 1", "new": "x = 2"}],
                               "options": {"dry_run": False}}, "b2")]},
             tool("b1", "bash", "x = 1\nprint(x)"), tool("b2", "edit", "edited 1 line"),
             {"role": "assistant", "content": "Changed x to 2.", "reasoning_content": "Done now."}]
MULTI_TURN = [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
              {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": " 6 \n"},
              {"role": "user", "content": "Check with python."},
              {"role": "assistant", "content": "", "tool_calls": [call("bash", {"command": "python -c 'print(3+3)'"}, "c")]},
              tool("c", "bash", "6"), {"role": "assistant", "content": "Python agrees: 6."}]
CHAINED = [{"role": "user", "content": "Two steps, please."},
           {"role": "assistant", "content": "Step one.", "tool_calls": [call("bash", {"command": "ls"}, "d1")]},
           tool("d1", "bash", "a.py b.py"),
           {"role": "assistant", "content": "", "tool_calls": [call("bash", {"command": "wc -l a.py"}, "d2")]},
           tool("d2", "bash", "10 a.py"),
           {"role": "assistant", "content": "a.py has 10 lines; b.py exists too."},
           {"role": "user", "content": "Thanks — ünïcødé ✓"}, {"role": "assistant", "content": "De rien."}]
ODD_VALUES = [{"role": "user", "content": "odd values"},
              {"role": "assistant", "content": "", "tool_calls": [call("edit", {
                  "path": "q\"uote.py", "edits": [], "options": {"dry_run": True, "n": None, "ratio": 0.5}}, "e")]},
              tool("e", "edit", ""), {"role": "assistant", "content": "ok"}]
DANGLING = [{"role": "user", "content": "Start the server."},
            {"role": "assistant", "content": "", "tool_calls": [call("bash", {"command": "serve"}, "f")]}]
CONTINUED = [{"role": "user", "content": "Say two things."}, {"role": "assistant", "content": "First thing."},
             {"role": "assistant", "content": "Second thing."}]
IPYTHON = [{"role": "user", "content": "Compute."},
           {"role": "assistant", "content": "", "tool_calls": [call("bash", {"command": "echo 1"}, "g")]},
           {"role": "ipython", "content": "1"}, {"role": "assistant", "content": "It printed 1."}]
CASES = {
    "plain": (MULTI_TURN[:4], None, {}), "system+tools+one call": (ONE_CALL, TOOLS, {}),
    "several calls, thinking": (TWO_CALLS, TOOLS, {}), "multi-turn with a call": (MULTI_TURN, TOOLS, {}),
    "chained calls": (CHAINED, TOOLS, {}), "odd argument values": (ODD_VALUES, TOOLS, {}),
    "dangling call": (DANGLING, TOOLS, {}), "consecutive assistant turns": (CONTINUED, None, {}),
    "ipython role": (IPYTHON, TOOLS, {}), "enable_thinking": (TWO_CALLS, TOOLS, {"enable_thinking": True}),
    "generation prompt": (ONE_CALL[:4], TOOLS, {"add_generation_prompt": True}),
    "tools in system (llama)": (ONE_CALL, TOOLS, {"tools_in_user_message": False}),
    "builtin tools (llama 3.1)": (ONE_CALL, TOOLS, {"builtin_tools": ["bash"]}),
}


@pytest.fixture(scope="module")
def tokenizer():
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), bos_token="<bos>", eos_token="<eos>")


def rendered(tokenizer, template, messages, tools, kwargs):
    try:
        return tokenizer.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=False,
                                             date_string="26 Jul 2024", **kwargs)
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"


def marked(template, messages, tools=TOOLS, **kwargs) -> list[str]:
    """The pieces of the rendered text the template marks as the model's own."""
    texts, spans = render_jinja_template(conversations=[messages], tools=tools, chat_template=template,
                                         return_assistant_tokens_mask=True, bos_token="<bos>", eos_token="<eos>",
                                         date_string="26 Jul 2024", **kwargs)
    return [texts[0][s:e] for s, e in spans[0] if e > s]


def test_the_folder_holds_the_families_trl_lacks():
    assert set(OURS) == {"gemma4", "gemma4_v2", "gemma4_v3", "gemma4_v4", "gemma4_v5", "llama3_1", "llama3_2"}
    for name in OURS:
        assert not (TRL / f"{name}_training.jinja").exists(), f"TRL now ships {name}_training: prefer it"


@pytest.mark.parametrize("name", sorted(OURS))
def test_header_names_the_stock_template_and_its_fingerprint(name):
    fields = ct.header(OURS[name])
    assert fields["stock"] == name and fields["family"] in ("gemma4", "llama3")
    assert fields["fingerprint"] == ct.fingerprint((TRL / f"{name}.jinja").read_text())
    assert ct.has_generation_markers(OURS[name])


@pytest.mark.parametrize("name", sorted(OURS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_renders_exactly_like_the_stock_template(tokenizer, name, case):
    messages, tools, kwargs = CASES[case]
    stock = (TRL / f"{name}.jinja").read_text()
    ours = rendered(tokenizer, OURS[name], messages, tools, kwargs)
    assert ours == rendered(tokenizer, stock, messages, tools, kwargs)


def test_the_battery_really_exercises_tool_calls_results_and_thinking(tokenizer):
    text = rendered(tokenizer, OURS["gemma4_v5"], TWO_CALLS, TOOLS, {})
    for needle in ("call:bash{", "call:edit{", "response:bash{", "x = 1\nprint(x)", "<|channel>thought\nRead it",
                   "You are a careful coding agent.", "<|tool>declaration:edit"):
        assert needle in text
    llama = rendered(tokenizer, OURS["llama3_2"], ONE_CALL, TOOLS, {})
    assert '{"name": "bash", "parameters": {"command": "pytest -q"}}' in llama and "ipython" in llama
    assert rendered(tokenizer, OURS["llama3_2"], TWO_CALLS, TOOLS, {}).startswith("raised")  # one call per turn


def test_gemma4_marks_calls_stop_text_and_end_but_not_results_or_headers():
    assert marked(OURS["gemma4_v5"], TWO_CALLS) == [
        "<|channel>thought\nRead it, then test.\n<channel|>",
        '<|tool_call>call:bash{command:<|"|>cat app.py<|"|>,timeout:30}<tool_call|>'
        '<|tool_call>call:edit{edits:[{new:<|"|>x = 2<|"|>,old:<|"|>x = 1<|"|>}],options:{dry_run:false},'
        'path:<|"|>app.py<|"|>}<tool_call|>',
        "<|tool_response>",  # only the opener the model writes to hand over, not the second result's
        "<|channel>thought\nDone now.\n<channel|>", "Changed x to 2.", "<turn|>"]
    assert marked(OURS["gemma4"], DANGLING) == ['<|tool_call>call:bash{command:<|"|>serve<|"|>}<tool_call|>',
                                                "<|tool_response>"]
    assert marked(OURS["gemma4_v2"], ONE_CALL) == [
        '<|tool_call>call:bash{command:<|"|>pytest -q<|"|>}<tool_call|>', "Running them now.", "<turn|>",
        "All 3 tests pass.", "<turn|>"]


def test_llama_marks_the_call_json_and_its_end_of_turn():
    assert marked(OURS["llama3_2"], ONE_CALL[:1] + ONE_CALL[1:2] + [
        {"role": "assistant", "content": "", "tool_calls": ONE_CALL[2]["tool_calls"]}] + ONE_CALL[3:]) == [
        '{"name": "bash", "parameters": {"command": "pytest -q"}}<|eot_id|>', "All 3 tests pass.<|eot_id|>"]
    assert marked(OURS["llama3_1"], ONE_CALL[:2] + [
        {"role": "assistant", "content": "", "tool_calls": ONE_CALL[2]["tool_calls"]}], builtin_tools=["bash"]) == [
        '<|python_tag|>bash.call(command="pytest -q")', "<|eom_id|>"]


# --- recognition ---------------------------------------------------------------------------------

def tokenizer_with(template: str) -> PreTrainedTokenizerFast:
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), bos_token="<bos>", eos_token="<eos>")
    tok.chat_template = template
    return tok


def resolve(template: str, needs_tools=True):
    return mc.resolve_chat_template(tokenizer_with(template), "model", "messages", "org/model",
                                    needs_tools=needs_tools, packaged=OURS)


@pytest.mark.parametrize("name", sorted(OURS))
def test_each_stock_revision_gets_its_own_training_template(name):
    template, label = resolve((TRL / f"{name}.jinja").read_text())
    assert template == OURS[name] and label == f"model → tunepack:{name} (tunepack training variant)"


def test_trl_variant_is_preferred_where_it_keeps_tool_calls():
    template, label = resolve((TRL / "qwen3.jinja").read_text())
    assert template == (TRL / "qwen3_training.jinja").read_text() and label.startswith("model → trl:qwen3")


def test_a_whitespace_revision_is_recognised_by_its_structure():
    stock = (TRL / "gemma4_v3.jinja").read_text()
    revised = "{# re-saved by an editor #}\n" + stock.replace("{%- if", "{%-  if").replace("\n", "\n  ", 40)
    assert revised != stock and ct.fingerprint(revised) == ct.fingerprint(stock)
    template, label = resolve(revised)
    assert template == OURS["gemma4_v3"] and "recognised by fingerprint" in label


def test_a_structurally_new_revision_that_renders_alike_is_recognised_by_rendering():
    revised = (TRL / "gemma4_v5.jinja").read_text().replace("ns_args", "ns_arguments")
    assert ct.fingerprint(revised) != ct.fingerprint((TRL / "gemma4_v5.jinja").read_text())
    template, label = resolve(revised)
    assert template == OURS["gemma4_v5"] and "recognised by rendering" in label


def test_an_unknown_revision_is_refused_naming_the_known_ones():
    changed = (TRL / "gemma4_v5.jinja").read_text().replace("<turn|>\\n", "<turn|>\\n\\n")
    with pytest.raises(mc.MaskCheckError) as err:
        resolve(changed)
    text = str(err.value)
    assert ct.fingerprint(changed) in text and "gemma4 family" in text
    for name in ("gemma4", "gemma4_v2", "gemma4_v5", "tunepack:gemma4_v5"):
        assert name in text


def test_a_family_whose_stock_template_drops_tool_calls_is_refused_only_for_tool_data():
    llama30 = (TRL / "llama3.jinja").read_text()
    with pytest.raises(mc.MaskCheckError) as err:
        resolve(llama30)
    text = str(err.value)
    assert "stock 'llama3' template" in text and "drops assistant tool calls" in text
    assert "tunepack:llama3_2" in text and "--rows turn" in text
    template, label = resolve(llama30, needs_tools=False)
    assert template == (TRL / "llama3_training.jinja").read_text() and "drops tool calls" in label


def test_a_template_with_markers_is_used_as_it_is():
    template, label = resolve(OURS["llama3_2"])
    assert template == OURS["llama3_2"] and label == "model"


def test_explicit_choices_and_a_bad_name():
    tok = tokenizer_with("{{ messages }}")
    assert mc.resolve_chat_template(tok, "tunepack:gemma4_v4", "messages", "m", packaged=OURS)[0] == OURS["gemma4_v4"]
    with pytest.raises(mc.MaskCheckError, match="tunepack:gemma4_v5"):
        mc.resolve_chat_template(tok, "tunepack:gemma5", "messages", "m", packaged=OURS)


def test_the_pack_round_trips_and_stays_small():
    blob = ct.pack(OURS)
    assert ct.unpack(blob) == OURS
    assert len(blob) < 12_000, "the script travels base64-encoded in one command argument (limit 128 KiB)"
    assert json.dumps(sorted(OURS))  # names are plain strings
