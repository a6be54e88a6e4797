"""Converted rows render through the TRL training templates that carry tool calls, and the assistant mask
is right token by token; templates that cannot carry tool calls are refused with what works instead."""

import json
from collections import Counter
from pathlib import Path

import pytest
import trl

from mcp_server.errors import TraceError
from mcp_server.traces import ConvertOptions, convert
from mcp_server.traces.templates import shape
from mcp_server.train import maskcheck as mc
from support.traces import FIXTURES, SHARED_TRACES

TRL_TEMPLATES = Path(trl.__file__).parent / "chat_templates"
# Each template's own special tokens, added to the locally trained tokenizer so its turns tokenize as they would.
SPECIAL = {
    "qwen3": [], "qwen2_5": [],
    "gptoss": ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|call|>", "<|return|>", "<|constrain|>"],
    "deepseekv3": ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
                   "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
                   "<｜tool▁sep｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>", "<｜tool▁output▁begin｜>",
                   "<｜tool▁output▁end｜>"],
    "gemma3": ["<start_of_turn>", "<end_of_turn>"],
    "llama3": ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
}


def tokenizer_for(model_dir, name):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIAL[name]})
    return tokenizer


def sources():
    paths = [FIXTURES]
    if SHARED_TRACES.exists():  # the small shared sessions of every format (the 1 MB Pi ones are slow to mask-check)
        paths += sorted(p for p in SHARED_TRACES.rglob("*.json*") if p.stat().st_size < 200_000 and "pi-mono" not in p.name
                        and "sidecar-storage" not in str(p))
        paths.append(SHARED_TRACES / "opencode" / "sidecar-storage")
    return paths


def converted(tmp_path, name, rows="conversation"):
    out = tmp_path / f"{name}.jsonl"
    convert(sources() if rows == "conversation" else [FIXTURES], out, ConvertOptions(template=name, rows=rows))
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.parametrize("name", ["qwen3", "qwen2_5", "gptoss", "deepseekv3"])
def test_rows_pass_the_mask_check_with_tool_keeping_templates(tmp_path, tiny_model_dir, name):
    rows = converted(tmp_path, name)
    assert any(m.get("tool_calls") for r in rows for m in r["messages"])
    template = (TRL_TEMPLATES / f"{name}_training.jinja").read_text()
    report = mc.check_dataset(tokenizer_for(tiny_model_dir, name), rows, fmt="messages", chat_template=template,
                              template_label=f"trl:{name}", max_length=100_000, sample=len(rows))
    assert report["problems"] == [] and report["rows_checked"] == len(rows) and report["trained_tokens"] > 0


@pytest.mark.parametrize("name", ["gemma3", "llama3", "phi3"])
def test_templates_without_tool_support_are_refused_for_conversations(tmp_path, name):
    with pytest.raises(TraceError) as err:
        convert([FIXTURES], tmp_path / "rows.jsonl", ConvertOptions(template=name))
    text = str(err.value)
    assert f"'{name}'" in text and "--rows turn" in text
    for keeper in ("qwen3", "qwen2_5", "gptoss", "deepseekv3"):
        assert keeper in text
    assert not (tmp_path / "rows.jsonl").exists()


@pytest.mark.parametrize("name", ["gemma3", "llama3"])
def test_turn_rows_spell_tool_calls_out_for_those_templates(tmp_path, tiny_model_dir, name):
    rows = converted(tmp_path, name, rows="turn")
    assert not any(m.get("tool_calls") or m["role"] == "tool" for r in rows for m in r["prompt"] + r["completion"])
    assert any("<tool_call>" in r["completion"][0]["content"] for r in rows)
    template = (TRL_TEMPLATES / f"{name}_training.jinja").read_text()
    report = mc.check_dataset(tokenizer_for(tiny_model_dir, name), rows, fmt="prompt_completion",
                              chat_template=template, template_label=f"trl:{name}", max_length=100_000, sample=len(rows))
    assert report["problems"] == []


def test_unknown_template_names_the_supported_ones(tmp_path):
    with pytest.raises(TraceError, match="qwen3, qwen2_5, gptoss, deepseekv3"):
        convert([FIXTURES], tmp_path / "rows.jsonl", ConvertOptions(template="mistral"))


def test_gptoss_shape_one_call_per_message_and_analysis_in_thinking():
    calls = [{"type": "function", "id": i, "function": {"name": "f", "arguments": {"x": i}}} for i in ("a", "b")]
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": "Checking.", "reasoning_content": "plan", "tool_calls": calls},
                {"role": "tool", "tool_call_id": "b", "name": "f", "content": "B"},
                {"role": "tool", "tool_call_id": "a", "name": "f", "content": "A"},
                {"role": "assistant", "content": "Done.", "reasoning_content": "wrap up"}]
    shaped = shape(messages, "gptoss", Counter())
    assert [(m["role"], m.get("tool_call_id") or m.get("content")) for m in shaped] == [
        ("user", "go"), ("assistant", ""), ("tool", "a"), ("assistant", ""), ("tool", "b"), ("assistant", "Done.")]
    assert shaped[1]["thinking"] == "plan\n\nChecking." and "thinking" not in shaped[3]
    assert shaped[-1]["thinking"] == "wrap up" and messages[1]["content"] == "Checking."  # the input is untouched
