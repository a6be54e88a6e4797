"""Nothing about the data is discovered after training: the held-out sessions are drawn with a seed of their own or
named, preflight and the sweep plan list them (turns, tool-call turns, tools) and fail a next-action eval that would
score no call, and a run where under 90 % of the assistant turns fit max_length fails its mask check with the length
that would fit them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.common import write_jsonl
from support.tutorial import write_agent_sessions
from mcp_server.config import parse_config
from mcp_server.errors import ConfigError
from mcp_server.evals.kit.heldout import HeldoutError, split


def rows_of(folder):
    from mcp_server.traces import ConvertOptions, convert

    out = folder.parent / "rows.jsonl"
    convert([str(folder)], out, ConvertOptions())
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_named_sessions_are_held_out_and_a_wrong_name_lists_the_real_ones(tmp_path):
    rows = rows_of(write_agent_sessions(tmp_path / "sessions", 6))
    _, held, record = split(rows, None, 0, names=["agent-002", "a4"])  # a file name and a session id
    assert {g["id"] for g in record["groups"]} == {'session:["agent-002.jsonl", "a2"]', 'session:["agent-004.jsonl", "a4"]'}
    assert record["named"] == ["agent-002", "a4"] and len(held) == 2
    with pytest.raises(HeldoutError, match="names nobody-here, which no session") as caught:
        split(rows, None, 0, names=["nobody-here"])
    assert "agent-000" in caught.value.fix
    with pytest.raises(HeldoutError, match="names every session"):
        split(rows, None, 0, names=[f"a{i}" for i in range(6)])
    seeds = {tuple(g["id"] for g in split(rows, 0.34, seed)[2]["groups"]) for seed in range(6)}
    assert len(seeds) > 1  # data.eval_seed draws: other seeds, other sessions


def test_the_held_out_keys_are_checked_where_they_are_written():
    base = {"model": {"name": "tiny:qwen3"}, "data": {"path": "rows.jsonl"}}
    cfg = parse_config({**base, "data": {"path": "s/", "format": "traces", "eval_sessions": ["a1"]}})
    assert cfg.data.held_out and cfg.eval.tasks == ["next-action"]  # named sessions: next-action by default
    for data, needle in (({"eval_sessions": ["a1"], "eval_fraction": 0.1}, "leave data.eval_fraction"),
                         ({"eval_fraction": 0.6}, "less than 0.5")):
        with pytest.raises(ConfigError, match=needle):
            parse_config({**base, "data": {"path": "rows.jsonl", **data}})
    with pytest.raises(ConfigError, match="holds out prompts"):
        parse_config({**base, "data": {"path": "p.jsonl", "eval_sessions": ["a1"]},
                      "training": {"method": "grpo", "per_device_train_batch_size": 8},
                      "grpo": {"rewards": {"tests": 1.0}}})


def test_preflight_and_the_sweep_plan_list_the_held_out_sessions_and_fail_a_set_without_calls(tmp_path):
    from mcp_server.pipeline.preflight import preflight
    from mcp_server.sweeps.plan import plan_sweep

    sessions = write_agent_sessions(tmp_path / "sessions", 6)
    config = tmp_path / "c.yaml"
    config.write_text(f"model: {{name: tiny:gemma4}}\ndata: {{path: {sessions}, eval_fraction: 0.34}}\n")
    report = preflight(config, smoke=False)
    check = next(c for c in report.checks if c.name == "heldout")
    assert report.ok and check.status == "pass" and report.heldout["sessions"] == 2
    assert report.heldout["call_turns"] > 0 and set(report.heldout["tools"]) <= {"read", "edit", "bash"}
    assert "drawn with data.eval_seed 0" in check.detail and "with a tool call" in check.detail
    (timed,) = report.eval_time["tasks"]  # each eval task's expected time, before anything runs
    assert timed["task"] == "next-action" and timed["items"] == report.heldout["turns"] and timed["models"] == 2
    assert report.eval_time["warning"] is None and next(c for c in report.checks if c.name == "eval_time").status == "pass"
    slow = tmp_path / "slow.yaml"  # HumanEval in full at 4096 new tokens cannot fit a 10-minute job
    slow.write_text(f"model: {{name: tiny:gemma4}}\ndata: {{path: {sessions}, eval_fraction: 0.34}}\n"
                    "eval: {tasks: [humaneval], max_tokens: 4096}\njob: {timeout_s: 600}\n")
    late = preflight(slow, smoke=False)
    check = next(c for c in late.checks if c.name == "eval_time")
    assert not late.ok and check.status == "fail" and "humaneval 164 items" in check.detail
    assert "10-minute timeout" in check.detail and "eval.limit" in check.fix
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"name: s\nbase: {config}\ngrid: {{training.learning_rate: [0.001, 0.002]}}\n")
    assert plan_sweep(spec).heldout == report.heldout  # every run is scored on the same sessions

    answers = tmp_path / "answers"  # sessions whose model turns never call a tool
    answers.mkdir()
    for i in range(4):
        entries = [{"type": "session", "version": 3, "id": f"q{i}", "timestamp": "t", "cwd": "/"}]
        for n, (role, text) in enumerate((("user", f"Question {i}?"), ("assistant", f"Answer {i}."))):
            message = {"role": role, "content": [{"type": "text", "text": text}]}
            if role == "assistant":
                message |= {"stopReason": "stop", "model": "m"}
            entries.append({"type": "message", "id": f"q{i}-{n}", "parentId": f"q{i}-{n - 1}" if n else None,
                            "timestamp": "t", "message": message})
        (answers / f"q{i}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    config.write_text(f"model: {{name: tiny:gemma4}}\ndata: {{path: {answers}, eval_sessions: [q1]}}\n")
    report = preflight(config, smoke=False)
    check = next(c for c in report.checks if c.name == "heldout")
    assert not report.ok and check.status == "fail" and "next-action would score no call" in check.detail
    assert "data.eval_sessions" in check.fix


def test_a_run_where_few_turns_fit_fails_its_mask_check_with_the_length_that_would(tmp_path, tiny_model_dir):
    from mcp_server.methods import write_script

    def long_turns(i: int) -> list[dict]:  # the first answer is far longer than the window, the second fits
        return [{"role": "user", "content": f"Explain module {i}."},
                {"role": "assistant", "content": f"Module {i} " + "does a great many things. " * 80},
                {"role": "user", "content": "And the tests?"},
                {"role": "assistant", "content": "They pass."}]

    data = write_jsonl(tmp_path / "long.jsonl", [{"messages": long_turns(i)} for i in range(4)])
    for allow in (False, True):
        cfg = parse_config({"model": {"name": str(tiny_model_dir)}, "data": {"path": str(data), "allow_truncation": allow},
                            "training": {"max_length": 128}})
        script = write_script(cfg, tmp_path / f"train-{allow}.py")
        done = subprocess.run([sys.executable, str(script), "--check-only"], capture_output=True, text=True,
                              timeout=600, cwd=tmp_path, env=os.environ.copy())
        if allow:
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            continue
        assert done.returncode == 3, done.stdout[-2000:]
        error = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("TUNEPACK_ERROR"))
                           .split(" ", 1)[1])
        assert error["problem"].startswith("Only 50% of the assistant turns would train: 4 of 8 do not fit")
        assert "raise training.max_length to " in error["fix"] and "data.allow_truncation: true" in error["fix"]


def test_a_run_from_an_adapter_whose_held_out_rows_call_nothing_is_told_its_lineage_is_scored(tmp_path):
    """Preflight of a run that starts from an adapter and holds out rows without tool calls: the fix names the other
    way out, holding nothing out so next action scores the sessions the adapter's lineage held out (their turns)."""
    from support.common import short_conversation
    from support.sweeps import unique

    from mcp_server.pipeline.preflight import preflight
    from mcp_server.registry import LocalRegistry

    sessions = write_jsonl(tmp_path / "sessions.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
    rows = [json.loads(line) for line in sessions.read_text().splitlines()]
    _, _, record = split(rows, 0.34, 0)
    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "tiny:qwen3", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"x")
    (folder / "tunepack_manifest.json").write_text(json.dumps({
        "method": "sft", "config": {"model": {"name": "tiny:qwen3"}, "data": {"path": [str(sessions)]},
                                    "lora": {"r": 8}}, "heldout": record}))
    entry = LocalRegistry().push(folder, unique("start"))
    answers = write_jsonl(tmp_path / "answers.jsonl", [{"messages": [
        {"role": "user", "content": f"Question {i}?"}, {"role": "assistant", "content": f"Answer {i}."}]}
        for i in range(6)])
    config = tmp_path / "c.yaml"
    config.write_text(f"model: {{name: tiny:qwen3, adapter: {entry.name}@v{entry.version}}}\n"
                      f"data: {{path: {answers}, eval_fraction: 0.34}}\neval: {{tasks: [next-action]}}\n")
    check = next(c for c in preflight(config, smoke=False).checks if c.name == "heldout")
    assert check.status == "fail" and "next-action would score no call" in check.detail
    assert f"a run from {entry.name}@v{entry.version} holding none out is scored on the" in check.fix
    import re

    (turns,) = re.findall(r"scored on the (\d+) turns its lineage held out", check.fix)
    assert int(turns) >= 2  # two held-out conversations, each with a call turn and an answer turn


def test_a_draw_that_holds_out_most_of_the_turns_fails_before_training(tmp_path):
    """One long session drawn out of a few short ones would hold out most of the turns: the draw is balanced by
    turns instead (sessions in the same seeded order, taken while within eval_fraction), and preflight says so.
    (Two trial agents found the lopsided draw by hand; the second one was refused by preflight.)"""
    from mcp_server.pipeline.preflight import preflight

    folder = tmp_path / "sessions"
    folder.mkdir()
    for i, turns in enumerate((30, 1, 1, 1)):
        entries = [{"type": "session", "version": 3, "id": f"s{i}", "timestamp": "t", "cwd": "/"}]
        for n in range(2 * turns):
            role = ("user", "assistant")[n % 2]
            message = {"role": role, "content": [{"type": "text", "text": f"{role} {i}.{n}"}]}
            if role == "assistant":
                message |= {"stopReason": "stop", "model": "m"}
            entries.append({"type": "message", "id": f"s{i}-{n}", "parentId": f"s{i}-{n - 1}" if n else None,
                            "timestamp": "t", "message": message})
        (folder / f"s{i}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    seen = set()
    for seed in range(12):
        config = tmp_path / "c.yaml"
        config.write_text(f"model: {{name: tiny:gemma4}}\ndata: {{path: {folder}, eval_fraction: 0.25, "
                          f"eval_seed: {seed}}}\neval: {{tasks: []}}\n")
        report = preflight(config, smoke=False)
        check = next(c for c in report.checks if c.name == "heldout")
        balanced = "sessions taken while the held-out turns stay within data.eval_fraction" in check.detail
        seen.add(balanced)
        assert check.status == "pass" and report.heldout["turns"] < 30, check  # the long session trains
        assert report.heldout["turns"] <= 0.25 * 33 or not balanced
    assert seen == {True, False}  # the plain draw and the balanced one both happened
