"""Windows: long conversations cut at turn boundaries into rows that fit max_length, every assistant turn
trained exactly once, repeated context never trained — checked with a counting function, then token by
token with real replicas on long sessions (the shared Pi sessions when present), then in a training run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from support.common import SHARED, write_jsonl
from mcp_server.resources import chat_templates
from mcp_server.train import maskcheck as mc
from mcp_server.train.windows import split_units, window_rows

SYSTEM = {"role": "system", "content": "You are a coding agent."}
TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a command.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]


def session(turns: int, result_size: int = 40, task: str = "Fix every module.") -> list[dict]:
    """A long agent session: a task, then tool-calling turns with results, a user nudge now and then."""
    messages = [SYSTEM, {"role": "user", "content": task}]
    for t in range(turns):
        messages.append({"role": "assistant", "content": f"Step {t}: checking module {t}.", "tool_calls": [
            {"id": f"c{t}", "type": "function", "function": {"name": "bash", "arguments": {"command": f"cat m{t}.py"}}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{t}", "name": "bash", "content": f"line {t} " * result_size})
        if t % 4 == 3:
            messages.append({"role": "assistant", "content": f"Modules up to {t} look fine."})
            messages.append({"role": "user", "content": "Keep going."})
    messages.append({"role": "assistant", "content": "All modules are fixed."})
    return messages


def chars(messages, tools) -> int:
    return len(json.dumps(messages)) // 4


def assistant_turns(messages):
    return [i for i, m in enumerate(messages) if m["role"] == "assistant"]


def test_units_and_head():
    messages = session(3)
    head, units = split_units(messages)
    assert head == 2 and messages[head - 1]["role"] == "user"
    assert [messages[s]["role"] for s, _, _, _ in units][:3] == ["assistant", "assistant", "assistant"]
    assert all(messages[e - 1]["role"] in ("tool", "assistant", "user") for _, _, e, _ in units)
    assert all(m == s + 1 for s, m, _, a in units if a)  # one assistant message per model turn in this session


@pytest.mark.parametrize("max_length", [120, 300, 1000])
def test_every_turn_is_trained_exactly_once_and_rows_fit(max_length):
    rows = [(session(12), TOOLS, {"id": 0}), (session(2), TOOLS, {"id": 1})]
    out, stats = window_rows(rows, chars, max_length, keep_turns=True)
    per_id = {0: Counter(), 1: Counter()}
    for row in out:
        assert chars(row["prompt"] + row["completion"], TOOLS) <= max_length
        assert row["prompt"][:2] == [SYSTEM, {"role": "user", "content": "Fix every module."}]
        assert row["completion"][0]["role"] == "assistant" and row["completion"][-1]["role"] == "assistant"
        assert chars(row["prompt"][2:], TOOLS) <= max_length * 0.5 + 10
        per_id[row["id"]].update(row["trained_turns"])
        messages = rows[row["id"]][0]
        for turn in row["trained_turns"]:
            assert messages[turn] in row["completion"]
    for rid, (messages, _, _) in enumerate(rows):
        trained = set(per_id[rid])
        dropped = sum(stats["turns_dropped"].values())
        assert all(n == 1 for n in per_id[rid].values())
        assert len(trained) + (dropped if rid == 0 else 0) == len(assistant_turns(messages))
    assert stats["turns_trained"] + sum(stats["turns_dropped"].values()) == stats["assistant_turns"]
    assert stats["windowed"] >= 1 and stats["compute_multiplier"] > 0


def test_a_turn_that_cannot_fit_is_dropped_and_counted():
    messages = session(3)
    messages[4]["content"] = "too long " * 400  # the second assistant turn's own text
    out, stats = window_rows([(messages, TOOLS, {})], chars, 200, keep_turns=True)
    assert stats["turns_dropped"] == {"turn_longer_than_max_length": 1}
    assert 4 not in {t for row in out for t in row["trained_turns"]}


def test_a_huge_tool_result_is_cut_in_the_context_not_dropped():
    messages = session(3, result_size=2000)  # each result ~16 000 characters
    out, stats = window_rows([(messages, TOOLS, {})], chars, 600, keep_turns=True)
    assert stats["turns_dropped"] == {} and stats["context_cut"] >= 1
    cut = [m for row in out for m in row["prompt"] if "characters cut by tunepack" in str(m.get("content"))]
    assert cut and all(m["role"] == "tool" for m in cut)


# --- token by token, with real replicas ---------------------------------------------------------------

@pytest.fixture(scope="module")
def long_sessions(tmp_path_factory):
    """Converted long sessions: the shared Pi sessions, or generated ones when ../shared is absent."""
    from mcp_server.traces import ConvertOptions, convert

    folder = tmp_path_factory.mktemp("long")
    pi = SHARED / "data" / "traces" / "pi"
    paths = [pi / n for n in ("pi-mono__large-session.v1.jsonl", "pi-mono__session-d5dde00.v1.jsonl",
                              "agent-history__pi-session-01.v3.redacted.jsonl")]
    if all(p.is_file() for p in paths):
        out = folder / "sessions.jsonl"
        convert([str(p) for p in paths], out, ConvertOptions())
        return [json.loads(line) for line in out.read_text().splitlines()], "../shared Pi sessions"
    return [{"messages": session(60, result_size=300), "tools": TOOLS}], "generated sessions (../shared is absent)"


@pytest.fixture(scope="module")
def replica(tmp_path_factory, long_sessions):
    from mcp_server.train.tiny_model import build_tiny_model

    folder = tmp_path_factory.mktemp("replica")
    data = write_jsonl(folder / "rows.jsonl", long_sessions[0])
    return build_tiny_model([str(data)], folder / "qwen3", arch="qwen3", vocab_size=2048)


def test_long_sessions_at_4096_train_nearly_every_turn_once_token_by_token(replica, long_sessions):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(replica)
    template, label = mc.resolve_chat_template(tokenizer, "model", "messages", "tiny:qwen3", packaged=chat_templates())

    def count(messages, tools):
        return len(tokenizer.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=True,
                                                 return_dict=True)["input_ids"])

    rows, where = long_sessions
    convs = [mc.conversation(r, "messages") for r in rows]
    out, stats = window_rows([(m, t, {"conv": i}) for i, (m, t, _) in enumerate(convs)], count, 4096, keep_turns=True)
    assert stats["turns_trained_share"] >= 0.99, stats
    seen = Counter((row["conv"], turn) for row in out for turn in row["trained_turns"])
    assert max(seen.values()) == 1 and len(seen) == stats["turns_trained"]
    report = mc.check_dataset(tokenizer, out, fmt="prompt_completion", chat_template=template, template_label=label,
                              max_length=4096, sample=len(out))
    assert report["problems"] == [] and report["rows_truncated"] == report["rows_dropped"] == 0
    print(f"\nWINDOWS {where}: {json.dumps(stats)}")


def test_the_mask_check_catches_a_window_that_would_train_its_context(replica):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(replica)
    template, _ = mc.resolve_chat_template(tokenizer, "model", "messages", "tiny:qwen3", packaged=chat_templates())
    messages = session(6)
    out, _ = window_rows([(messages, TOOLS, {})], lambda m, t: len(tokenizer.apply_chat_template(
        m, tools=t, chat_template=template, tokenize=True, return_dict=True)["input_ids"]), 400)
    window = next(r for r in out if any(m["role"] == "assistant" for m in r["prompt"]))
    whole = [{"messages": window["prompt"] + window["completion"], "tools": TOOLS}]  # the context as if trained
    rows = [{"prompt": window["prompt"][:2], "completion": window["prompt"][2:] + window["completion"], "tools": TOOLS}]
    report = mc.check_dataset(tokenizer, [window], fmt="prompt_completion", chat_template=template,
                              template_label="t", max_length=4096)
    assert report["problems"] == []
    trained_more = mc.check_dataset(tokenizer, rows, fmt="prompt_completion", chat_template=template,
                                    template_label="t", max_length=4096)["trained_tokens"]
    assert trained_more > report["trained_tokens"]  # moving context into the completion trains it: windows do not
    assert whole  # (the conversation row trains every turn, once per row)


@pytest.mark.slow
def test_a_run_on_long_conversations_trains_windows(tmp_path, tiny_model_dir):
    from mcp_server.config import parse_config
    from mcp_server.methods import write_script

    data = write_jsonl(tmp_path / "long.jsonl", [{"messages": session(6, result_size=6)} for _ in range(4)])
    cfg = parse_config({"model": {"name": str(tiny_model_dir)}, "data": {"path": str(data)},
                        "training": {"max_length": 128, "max_steps": 8, "logging_steps": 2, "learning_rate": 5e-3,
                                     "per_device_train_batch_size": 4, "gradient_checkpointing": False},
                        "tracking": {"project": "windows-tests", "run_name": "windows"}})
    script = write_script(cfg, tmp_path / "train.py")
    out = tmp_path / "adapter"
    done = subprocess.run([sys.executable, str(script), "--output-dir", str(out)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env=os.environ.copy())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    manifest = json.loads((out / "tunepack_manifest.json").read_text())
    windows = manifest["mask_check"]["windows"]
    assert windows["windowed"] == 4 and windows["windows"] > 4
    assert windows["turns_trained"] + sum(windows["turns_dropped"].values()) == windows["assistant_turns"] == 4 * len(assistant_turns(session(6)))
    assert manifest["mask_check"]["format"] == "prompt_completion" and manifest["mask_check"]["problems"] == []
    assert "windows: 4 of 4 conversations" in done.stdout and manifest["training"]["steps"] == 8
