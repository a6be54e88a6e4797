"""The tool_call reward (evals/kit/toolreward.py) on calls each family's own template writes, and the prompt rows
(methods/grpo/prompts.py tool_rows, `tunepack grpo-prompts --rows`) it scores against. No model is trained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.common import TOOLS, run_cli, short_conversation, write_jsonl
from test_evals_toolcalls import TEMPLATES, family

from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.toolcalls import FAMILIES, Call, parse, render_assistant
from mcp_server.evals.kit.toolreward import arguments_fit, tool_call_reward
from mcp_server.methods.grpo.prompts import tool_rows

# One stock template per family: hermes (Qwen3), llama3 (Llama 3.2), gemma4 (Gemma 4).
FAMILY_TEMPLATE = {"hermes": "trl/qwen3", "llama3": "trl/llama3_2", "gemma4": "trl/gemma4"}
SHELL = {"type": "function", "function": {"name": "shell", "description": "Run a command in a shell.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
    "required": ["command"]}}}
ROW_TOOLS = [*TOOLS, SHELL]
REFERENCE = {"name": "bash", "arguments": {"command": "pytest pkg1"}}
CALL_ROW = {"tools": ROW_TOOLS, "reference": REFERENCE}
ANSWER_ROW = {"tools": ROW_TOOLS, "reference": None}


def written(fam: str, calls: list[Call], content: str = "") -> str:
    """What the family's template writes for this assistant message (the completion a model would generate)."""
    name = FAMILY_TEMPLATE[fam]
    assert family(name) == fam
    return render_assistant(TEMPLATES[name], calls, content, tools=ROW_TOOLS)


def score(fam: str, text: str, row: dict = CALL_ROW) -> float:
    return tool_call_reward(fam, text, row)["score"]


def test_every_family_has_a_template_here():
    assert set(FAMILY_TEMPLATE) == set(FAMILIES)


@pytest.mark.parametrize("fam", FAMILIES)
def test_the_reward_pays_each_part_of_a_call_in_the_familys_own_syntax(fam):
    exact = tool_call_reward(fam, written(fam, [Call("bash", {"command": "pytest pkg1"})]), CALL_ROW)
    assert exact == {"score": 1.0, "parts": {"expected": "call", "called": True, "well_formed": True, "name": True,
                                             "schema": True, "values": True, "extra_calls": 0, "error": None}}
    # another offered tool whose schema the arguments fit: well-formed + schema, not name nor values
    other = tool_call_reward(fam, written(fam, [Call("shell", {"command": "pytest pkg1"})]), CALL_ROW)
    assert other["score"] == 0.5
    assert (other["parts"]["name"], other["parts"]["schema"], other["parts"]["values"]) == (False, True, False)
    assert score(fam, written(fam, [Call("rm", {"command": "pytest pkg1"})])) == 0.25  # a tool no schema covers
    assert score(fam, written(fam, [Call("bash", {"command": "pytest pkg2"})])) == 0.75  # wrong value
    assert score(fam, written(fam, [Call("bash", {})])) == 0.5  # a required argument missing: schema and values
    assert score(fam, written(fam, [Call("bash", {"command": 3})])) == 0.5  # a wrong JSON type
    assert score(fam, written(fam, [Call("bash", {"command": "pytest pkg1", "cwd": "/"})])) == 0.5  # unknown key


@pytest.mark.parametrize("fam", FAMILIES)
def test_a_broken_call_or_a_text_answer_where_a_call_is_expected_scores_zero(fam):
    whole = written(fam, [Call("bash", {"command": "pytest pkg1"})])
    cut = whole[:len(whole) // 2]  # ran out of tokens in the middle of the call
    assert not parse(fam, cut).well_formed
    broken = tool_call_reward(fam, cut, CALL_ROW)
    assert broken["score"] == 0.0 and broken["parts"]["called"] and broken["parts"]["error"]
    answer = tool_call_reward(fam, written(fam, [], "All tests in pkg1 pass."), CALL_ROW)
    assert answer["score"] == 0.0 and not answer["parts"]["called"]


@pytest.mark.parametrize("fam", FAMILIES)
def test_where_the_reference_is_an_answer_only_text_without_a_call_attempt_pays(fam):
    assert tool_call_reward(fam, written(fam, [], "All tests in pkg1 pass."), ANSWER_ROW) == {
        "score": 1.0, "parts": {"expected": "answer", "called": False, "well_formed": True, "name": None,
                                "schema": None, "values": None, "extra_calls": 0, "error": None}}
    assert score(fam, written(fam, [Call("bash", {"command": "pytest pkg1"})]), ANSWER_ROW) == 0.0
    whole = written(fam, [Call("bash", {"command": "pytest pkg1"})])
    assert score(fam, whole[:len(whole) // 2], ANSWER_ROW) == 0.0  # a broken call is a call attempt too


def test_extra_calls_are_reported_not_scored():
    calls = [Call("bash", {"command": "pytest pkg1"}), Call("shell", {"command": "ls"})]
    for fam in ("hermes", "gemma4"):
        result = tool_call_reward(fam, written(fam, calls), CALL_ROW)
        assert result["score"] == 1.0 and result["parts"]["extra_calls"] == 1
    with pytest.raises(KitError):  # Llama 3.x's templates write one call per message; its parser reads several
        written("llama3", calls)
    llama = '{"name": "bash", "parameters": {"command": "pytest pkg1"}}; {"name": "shell", "parameters": {}}'
    assert tool_call_reward("llama3", llama, CALL_ROW)["parts"]["extra_calls"] == 1


def test_rows_read_through_json_and_the_schema_rules():
    text = written("hermes", [Call("bash", {"command": "pytest pkg1"})])
    assert score("hermes", text, {"tools": json.dumps(ROW_TOOLS), "reference": json.dumps(REFERENCE)}) == 1.0
    openai_shape = {"function": {"name": "bash", "arguments": json.dumps({"command": "pytest pkg1"})}}
    assert score("hermes", text, {"tools": ROW_TOOLS, "reference": openai_shape}) == 1.0
    assert arguments_fit({"command": "x", "timeout": 5}, ROW_TOOLS, "shell")
    assert not arguments_fit({"command": "x", "timeout": True}, ROW_TOOLS, "shell")  # a bool is no integer
    assert not arguments_fit({"command": "x", "timeout": 1.5}, ROW_TOOLS, "shell")
    nested = [{"name": "q", "parameters": {"type": "object", "additionalProperties": {"type": "number"}, "properties": {
        "mode": {"enum": ["a", "b"]}, "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}}}}]
    assert arguments_fit({"mode": "a", "tags": ["x"], "opts": {"n": None}, "extra": 2.5}, nested, "q")
    assert not arguments_fit({"mode": "c"}, nested, "q")
    assert not arguments_fit({"tags": ["x", 1]}, nested, "q")
    assert not arguments_fit({"opts": {"m": 1}}, nested, "q")
    assert not arguments_fit({"extra": "s"}, nested, "q")
    assert arguments_fit({}, [{"name": "ping"}], "ping") and not arguments_fit({"x": 1}, [{"name": "ping"}], "ping")
    with pytest.raises(KitError):
        tool_call_reward("chatml", text, CALL_ROW)


def _trace_rows() -> list[dict]:
    rm = short_conversation(9)
    rm[2] = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "rm", "arguments": '{"path": "/"}'}}]}
    return [{"messages": short_conversation(0), "tools": TOOLS, "source": "/t/traces.jsonl", "session": "s0"},
            {"messages": short_conversation(1), "tools": TOOLS, "id": "row-1"},
            {"messages": short_conversation(2), "tools": json.dumps(TOOLS)},
            {"messages": rm, "tools": TOOLS, "session": "s9"},
            {"messages": short_conversation(0), "tools": TOOLS, "source": "/t/traces.jsonl", "session": "s0"}]


def test_tool_rows_give_one_prompt_per_assistant_turn_with_stable_ids():
    stats: dict = {}
    rows = tool_rows(_trace_rows(), stats)
    ids = [r["id"] for r in rows]
    assert ids[:4] == ["traces.jsonl/s0:2", "traces.jsonl/s0:4", "row-1:2", "row-1:4"]
    assert ids[4].startswith("conversation:") and ids[4].endswith(":2") and ids[6] == "s9:4"
    assert ids == [r["id"] for r in tool_rows(_trace_rows())]  # stable
    call, answer = rows[0], rows[1]
    assert call["prompt"] == short_conversation(0)[:2] and call["tools"] == TOOLS
    assert call["reference"] == {"name": "bash", "arguments": {"command": "pytest pkg0"}}
    assert answer["prompt"] == short_conversation(0)[:4] and answer["reference"] is None
    assert rows[4]["tools"] == TOOLS  # tools given as a JSON string are read
    assert stats == {"rows": 5, "written": 7, "calls": 3, "answers": 4,
                     "dropped": {"unknown_tool": 1, "duplicate": 2}, "unknown_tools": {"rm": 1},
                     "tools_seen": {"bash": 3}}
    # turn rows (prompt + completion) index the turn in the whole conversation
    turn = {"prompt": short_conversation(3)[:4], "completion": short_conversation(3)[4:], "tools": TOOLS,
            "session": "s3"}
    assert [r["id"] for r in tool_rows([turn])] == ["s3:4"]
    # two windows of one session repeat turn indices: the later prompt gets its content hash
    windows = [{"messages": short_conversation(i), "tools": TOOLS, "session": "s"} for i in (4, 5)]
    ids = [r["id"] for r in tool_rows(windows)]
    assert ids[:2] == ["s:2", "s:4"] and ids[2].startswith("s:2~") and ids[3].startswith("s:4~")
    assert ids == [r["id"] for r in tool_rows(windows)] and len(set(ids)) == 4


@pytest.mark.parametrize("fam", FAMILIES)
def test_the_reference_of_a_prompt_row_written_by_its_family_scores_one(fam):
    for row in tool_rows(_trace_rows()[:2]):
        ref = row["reference"]
        text = written(fam, [Call(ref["name"], ref["arguments"])] if ref else [], "" if ref else "Done.")
        assert score(fam, text, row) == 1.0, (row["id"], text)


def test_grpo_prompts_rows_writes_the_prompt_rows_and_reports(tmp_path):
    source = write_jsonl(tmp_path / "rows.jsonl", _trace_rows())
    out = tmp_path / "prompts.jsonl"
    done = run_cli("grpo-prompts", "--rows", str(source), "-o", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["rows"] == 5 and report["written"] == 7 and (report["calls"], report["answers"]) == (3, 4)
    assert report["dropped"] == {"unknown_tool": 1, "duplicate": 2} and report["tools_seen"] == {"bash": 3}
    assert report["output"] == str(out)
    assert [json.loads(line) for line in out.read_text().splitlines()] == tool_rows(_trace_rows())
    both = run_cli("grpo-prompts", "--rows", str(source), "--mbpp", str(source), "-o", str(out))
    assert both.returncode == 2 and "not allowed with" in both.stderr
    empty = run_cli("grpo-prompts", "--rows", str(write_jsonl(tmp_path / "e.jsonl", [{"messages": []}])),
                    "-o", str(out))
    assert empty.returncode != 0 and "no prompt rows" in empty.stderr


def test_grpo_trains_on_the_tool_call_reward_end_to_end(tmp_path):
    """Prompt rows of converted sessions (their tools rendered into each prompt by the family's template), the
    tool_call reward read by the family's parser in training and on the held-out curve."""
    import yaml

    source = write_jsonl(tmp_path / "rows.jsonl", [{"messages": short_conversation(i), "tools": TOOLS,
                                                    "session": f"s{i}"} for i in range(24)])
    prompts = tmp_path / "prompts.jsonl"
    assert run_cli("grpo-prompts", "--rows", str(source), "-o", str(prompts)).returncode == 0
    raw = {"model": {"name": "tiny:qwen3"}, "quantization": "none", "data": {"path": str(prompts), "eval_fraction": 0.25},
           "training": {"method": "grpo", "max_steps": 2, "per_device_train_batch_size": 8, "logging_steps": 1,
                        "learning_rate": 0.01},
           "grpo": {"rewards": {"tool_call": 1.0}, "num_generations": 4, "max_completion_length": 32,
                    "signal_check": False, "eval_prompts": 8},
           "tracking": {"project": "grpo-tools"}, "output": {"name": "grpo-tools"}, "eval": {"tasks": []}}
    path = tmp_path / "tools.yaml"
    path.write_text(yaml.safe_dump(raw))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    manifest = json.loads((Path(result["adapter_path"]) / "tunepack_manifest.json").read_text())
    curve = manifest["grpo"]["curve"]
    assert [c["step"] for c in curve] == [0, 1, 2] and set(curve[0]["components"]) == {"tool_call"}
    assert curve[0]["n"] == 8 and all(0.0 <= c["reward"] <= 1.0 for c in curve)
    log = Path(result["log_path"]).read_text()
    assert '"rewards/tool_call/mean"' in log
    script = Path(result["script_path"]).read_text()
    assert "toolreward.py" in script and "toolcalls.py" in script  # the family's parsers travel with the kit
