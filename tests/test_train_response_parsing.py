"""tunepack's tool-call parser inside TRL's GRPO tool loop (mcp_server/train/response_parsing.py).

What TRL 1.16 does on its own, asserted so a TRL upgrade that changes it shows up here:
- ``add_response_schema`` (which ``GRPOTrainer(tools=...)`` calls) refuses every tunepack training template;
- TRL's specs set by hand misread calls the templates write (Gemma 4's ``None``, dotted names, dashed keys;
  Llama's ``<|python_tag|>``, ``"arguments"`` and several calls);
- on the stock Qwen3 template TRL and tunepack read every message alike.
Tokenizers are the tiny replicas' (real special tokens, the template under test); one GRPO step runs on CPU.
"""

from __future__ import annotations

import pytest
from trl.chat_template_utils import add_response_schema, gemma4_template, llama3_template
from trl.chat_template_utils import parse_response as trl_parse

from mcp_server.evals.kit.toolcalls import Call, render_assistant
from mcp_server.resources import chat_templates
from mcp_server.train.response_parsing import ResponseParsingError, parse_response, use_tunepack_parser
from mcp_server.train.tiny_model import FAMILIES, build_model, build_tokenizer, stock_template

OURS = chat_templates()
USER = [{"role": "user", "content": "Weather in Paris?"}]


def tokenizer_for(family: str, template: str):
    return build_tokenizer(["hello world, the weather in Paris " * 8], FAMILIES[family], template, 400)


def ids_and_prefix(tok, text: str):
    prefix = tok.apply_chat_template(USER, add_generation_prompt=True, tokenize=True, return_dict=False)
    return tok(text, add_special_tokens=False)["input_ids"], prefix


def render(tok, calls, content=""):
    return render_assistant(tok.chat_template, calls, content, bos_token=tok.bos_token or "", eos_token=tok.eos_token)


def message(calls, content=""):
    out = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
    return out


@pytest.mark.parametrize("name", sorted(OURS))
def test_trl_refuses_every_tunepack_template(name):
    tok = tokenizer_for("gemma4" if name.startswith("gemma") else "llama3", OURS[name])
    with pytest.raises(ValueError, match="Unrecognized chat template"):
        add_response_schema(tok)
    use_tunepack_parser(tok)
    assert tok.response_template is not None  # what GRPOTrainer checks before calling add_response_schema


GEMMA_CASES = [  # calls the Gemma 4 templates write that TRL's gemma4 spec does not read as calls
    ("gemma4", [Call("get_weather", {"city": "Paris", "when": None})]),  # written 'when:None' before v5
    ("gemma4_v5", [Call("math.factorial", {"n": 5})]),
    ("gemma4_v5", [Call("query", {"filter": {"max-age": 3}})]),
]


@pytest.mark.parametrize("name, calls", GEMMA_CASES)
def test_gemma_calls_trl_misreads_and_ours_reads(name, calls):
    tok = tokenizer_for("gemma4", OURS[name])
    tok.response_template = gemma4_template  # the route TRL documents for a template it does not know
    ids, prefix = ids_and_prefix(tok, render(tok, calls))
    theirs = trl_parse(tok, ids, prefix=prefix)
    assert "tool_calls" not in theirs and theirs["content"].startswith("call:")  # the call became text
    assert parse_response(tok, ids) == message(calls)
    use_tunepack_parser(tok)
    assert trl_parse(tok, ids, prefix=prefix) == message(calls)  # TRL's own entry point now reads it


@pytest.mark.parametrize("name", ["llama3_1", "llama3_2"])
def test_llama_messages_trl_misreads_and_ours_reads(name):
    tok = tokenizer_for("llama3", OURS[name])
    tok.response_template = llama3_template
    f, g = Call("f", {"a": 1}), Call("g", {})
    cases = {  # message -> (what TRL returns, what it means)
        '<|python_tag|>{"name": "f", "parameters": {"a": 1}}<|eot_id|>':
            ({**message([f]), "content": "<|python_tag|>"}, [f]),
        '{"name": "f", "arguments": {"a": 1}}<|eot_id|>':
            ({"role": "assistant", "content": '{"name": "f", "arguments": {"a": 1}}'}, [f]),
        '{"name": "f", "parameters": {"a": 1}}; {"name": "g", "parameters": {}}<|eot_id|>':
            ({"role": "assistant", "content": '{"name": "f", "parameters": {"a": 1}}; {"name": "g", "parameters": {}}'},
             [f, g]),
    }
    for text, (theirs, calls) in cases.items():
        ids, prefix = ids_and_prefix(tok, text)
        assert trl_parse(tok, ids, prefix=prefix) == theirs
        assert parse_response(tok, ids) == message(calls)
    written = render(tok, [Call("get_weather", {"city": "Paris, FR", "days": [1, 2]})])
    ids, prefix = ids_and_prefix(tok, written)
    assert parse_response(tok, ids) == trl_parse(tok, ids, prefix=prefix)  # what the template writes: alike


def test_ours_agrees_with_trl_on_stock_qwen3():
    tok = add_response_schema(tokenizer_for("qwen3", stock_template(FAMILIES["qwen3"])))
    nested = {"q": 'a, "b" {c}\nd', "n": [1, 2.5, None, True, {"k": []}], "e": ""}
    texts = [render(tok, calls, content) for calls, content in [
        ([Call("get_weather", {"city": "Paris"})], ""), ([Call("search", nested)], ""),
        ([Call("a", {}), Call("b.c", {"x": -1})], ""), ([Call("get_weather", {"city": "Oslo"})], "Checking."),
        ([], "Plain answer.")]]
    texts += ["<think>\nThe user wants weather.\n</think>\n\n" + texts[0].split("</think>\n\n", 1)[1],
              '<tool_call>\n{"name": "f", "arguments": {"a": 1}\n</tool_call><|im_end|>']  # malformed: both fall back
    for text in texts:
        ids, prefix = ids_and_prefix(tok, text)
        assert parse_response(tok, ids) == trl_parse(tok, ids, prefix=prefix), text
    assert "tool_calls" not in parse_response(tok, ids)


def test_an_unknown_template_is_refused_with_a_fix():
    tok = tokenizer_for("qwen3", "{% for m in messages %}{{ m.content }}{% endfor %}")
    with pytest.raises(ResponseParsingError, match="Fix: Train with one of those templates"):
        use_tunepack_parser(tok)


def test_grpo_tool_loop_calls_the_tools_with_our_reading(tmp_path, monkeypatch):
    """One GRPO step on the tiny Llama replica with tunepack's llama3_2 template. The completion (fixed by a
    rollout_func) is two calls separated by ';', as Llama 3.2 writes parallel calls and TRL's spec reads as
    text: TRL's tool loop must run both tools with their arguments and hand the results back."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tok = tokenizer_for("llama3", OURS["llama3_2"])
    model = build_model("llama3", tok, FAMILIES["llama3"])
    ran, seen = [], []

    def get_weather(city: str, when: str | None = None) -> str:
        """The weather.

        Args:
            city: The city.
            when: The day.
        """
        ran.append((city, when))
        return f"sunny in {city}"

    calls = [Call("get_weather", {"city": "Paris, FR"}), Call("get_weather", {"city": "Oslo", "when": None})]
    call_ids = tok('{"name": "get_weather", "parameters": {"city": "Paris, FR"}}; '
                   '{"name": "get_weather", "parameters": {"city": "Oslo", "when": null}}<|eot_id|>',
                   add_special_tokens=False)["input_ids"]

    def rollout(prompts, trainer):
        prompt_ids = [trainer.processing_class.apply_chat_template(p, tools=trainer.tools, add_generation_prompt=True,
                                                                  tokenize=True, return_dict=False) for p in prompts]
        # logprobs None, as transformers' generate gives them (TRL 1.16's loop fails on a list from here)
        return {"prompt_ids": prompt_ids, "completion_ids": [list(call_ids) for _ in prompts], "logprobs": None}

    def reward(completions, **_):
        seen.extend(completions)
        return [0.0] * len(completions)

    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=len(call_ids) + 80, max_steps=1, max_tool_calling_iterations=1,
                      use_cpu=True, bf16=False, report_to=[], save_strategy="no")
    data = Dataset.from_list([{"prompt": USER}] * 2)
    setup = dict(model=model, reward_funcs=reward, args=args, train_dataset=data, tools=[get_weather],
                 rollout_func=rollout)
    with pytest.raises(ValueError, match="Unrecognized chat template"):
        GRPOTrainer(processing_class=tok, **setup)
    GRPOTrainer(processing_class=use_tunepack_parser(tok), **setup).train()
    assert ran == [("Paris, FR", None), ("Oslo", None)] * 2
    first = seen[0]
    assert first[0] == message(calls)
    assert first[1:3] == [{"role": "tool", "name": "get_weather", "content": f"sunny in {city}"}
                          for city in ("Paris, FR", "Oslo")]
