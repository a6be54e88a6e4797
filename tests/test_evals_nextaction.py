"""Next-action scoring rules, the held-out turns it reads, the context cut and the 95 % intervals."""

from __future__ import annotations

import pytest

from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.heldout import split
from mcp_server.evals.kit.intervals import rate, wilson
from mcp_server.evals.kit.nextaction import (
    Turn, baseline, fit_context, judge_turn, next_action_items, reference_calls, tally,
)
from mcp_server.evals.kit.toolcalls import Call, Parsed

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]


def _turn(calls: list[Call]) -> Turn:
    return Turn("s", 1, [{"role": "user", "content": "go"}], TOOLS, calls)


def test_a_right_call_hits_every_call_metric_and_a_wrong_one_misses_for_its_reason():
    turn = _turn([Call("read", {"path": "a.py"})])
    right = judge_turn(turn, Parsed("", [Call("read", {"path": "a.py"})]))
    assert right == {"action_type": True, "parses": True, "tool_name": True, "args_valid": True, "arg_keys": True,
                     "arg_values": True, "stop": None}
    other_value = judge_turn(turn, Parsed("", [Call("read", {"path": "b.py"})]))
    assert other_value["arg_keys"] and not other_value["arg_values"]
    bad_type = judge_turn(turn, Parsed("", [Call("read", {"path": 3})]))
    assert bad_type["tool_name"] and not bad_type["args_valid"]
    unknown_tool = judge_turn(turn, Parsed("", [Call("rm", {"path": "a.py"})]))
    assert not unknown_tool["tool_name"] and not unknown_tool["args_valid"]
    answered = judge_turn(turn, Parsed("Done.", []))
    assert answered["action_type"] is False and answered["parses"] is False and answered["tool_name"] is False
    broken = judge_turn(turn, Parsed("", [Call("read", {"path": "a.py"})], well_formed=False, error="x"))
    assert broken["tool_name"] and not broken["parses"]


def test_stop_counts_only_where_the_agent_answered():
    turn = _turn([])
    assert judge_turn(turn, Parsed("Done.", [])) == {"action_type": True, "parses": None, "tool_name": None,
                                                     "args_valid": None, "arg_keys": None, "arg_values": None,
                                                     "stop": True}
    assert judge_turn(turn, Parsed("", [Call("read", {})]))["stop"] is False


def test_tally_gives_n_and_a_wilson_interval_and_the_baseline_is_scored_by_the_same_rules():
    turns = [_turn([Call("read", {"path": "a"})])] * 3 + [_turn([Call("bash", {"command": "ls"})])] + [_turn([])]
    floor = baseline(turns, "read")
    assert floor["metrics"]["tool_name"] == rate(3, 4)
    assert floor["metrics"]["stop"] == rate(0, 1)
    assert floor["metrics"]["action_type"] == rate(4, 5)
    low, high = wilson(3, 4)
    assert 0.30 < low < 0.31 and 0.95 < high < 0.96  # the textbook Wilson interval for 3/4
    assert tally([])["tool_name"] == {"score": None, "n": 0, "low": 0.0, "high": 1.0}


def _rows(sessions: int) -> list[dict]:
    rows = []
    for s in range(sessions):
        tool = "read" if s % 3 else "bash"
        rows.append({"session": f"s{s}", "source": f"/x/s{s}.jsonl", "tools": TOOLS, "messages": [
            {"role": "user", "content": f"task {s}"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": tool, "arguments": '{"path": "a"}'}}]},
            {"role": "tool", "content": "ok"}, {"role": "assistant", "content": "done"}]})
    return rows


def test_items_are_every_assistant_turn_of_the_held_out_sessions_only():
    rows = _rows(10)
    _, held, record = split(rows, 0.3, seed=1)
    turns, tool = next_action_items(rows, record)
    held_sessions = {rows[i]["session"] for i in held}
    assert len(turns) == 2 * len(held) and {t.session.split('"')[-2] for t in turns} == held_sessions
    assert [t.index for t in turns[:2]] == [1, 3]
    assert turns[0].reference[0].arguments == {"path": "a"}  # the row's JSON-string arguments, read
    assert turns[1].reference == [] and turns[1].context[-1] == {"role": "tool", "content": "ok"}
    trained = [r for i, r in enumerate(rows) if i not in held]
    names = [r["messages"][1]["tool_calls"][0]["function"]["name"] for r in trained]
    assert tool == max(set(names), key=names.count)


def test_items_refuse_when_the_training_data_changed():
    rows = _rows(6)
    _, held, record = split(rows, 0.3, seed=1)
    rows[held[0]]["messages"][0]["content"] = "edited since"
    with pytest.raises(KitError, match="changed since the training run|not in the data"):
        next_action_items(rows, record)


def test_reference_calls_read_both_argument_shapes():
    message = {"tool_calls": [{"function": {"name": "a", "arguments": '{"x": 1}'}},
                              {"function": {"name": "b", "arguments": {"y": [1]}}}]}
    assert reference_calls(message) == [Call("a", {"x": 1}), Call("b", {"y": [1]})]


def test_the_context_keeps_the_opening_and_the_latest_turns_and_never_starts_at_a_tool_result():
    context = [{"role": "system", "content": "s"}, {"role": "user", "content": "u0"},
               {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "a", "arguments": {}}}]},
               {"role": "tool", "content": "r1"}, {"role": "assistant", "content": "a1"},
               {"role": "user", "content": "u2"}]
    kept = fit_context(context, lambda c: len(c) <= 4)
    assert kept == [context[0], context[1], context[4], context[5]]
    kept = fit_context(context, lambda c: len(c) <= 3)
    assert kept == [context[0], context[1], context[5]]
    assert fit_context(context, lambda c: True) == context
