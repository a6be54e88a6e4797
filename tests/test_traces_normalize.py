"""The training rules every format goes through: pairing, dangling calls, failed turns, alternation."""

from collections import Counter

import pytest

from mcp_server.traces.model import Call, ConvertOptions, Msg
from mcp_server.traces.normalize import normalize
from mcp_server.traces.stats import FileReport
from support.traces import FIXTURES, SHARED_TRACES, check_structure, rows_of


def run(messages, by_position=False, **options):
    report = FileReport(path="x", format="test")
    result = normalize(messages, by_position=by_position, opts=ConvertOptions(**options), report=report,
                       thinking=Counter())
    return (result.messages if result else None), report.issues


def call(cid, name="bash", **args):
    return Call(id=cid, name=name, arguments=args or {"command": "ls"})


def test_results_follow_their_turn_in_call_order_and_a_waiting_prompt_moves_after_them():
    messages, issues = run([
        Msg("user", "go"),
        Msg("assistant", "two calls", calls=[call("a"), call("b")]),
        Msg("tool", "B", call_id="b"),
        Msg("user", "(typed while the tools ran)"),
        Msg("tool", "A", call_id="a"),
        Msg("assistant", "done"),
    ])
    assert [(m["role"], m.get("tool_call_id") or m["content"]) for m in messages] == [
        ("user", "go"), ("assistant", "two calls"), ("tool", "a"), ("tool", "b"),
        ("user", "(typed while the tools ran)"), ("assistant", "done")]
    assert issues == {}


def test_dangling_calls_and_orphan_results_are_dropped_and_counted():
    messages, issues = run([
        Msg("user", "go"),
        Msg("assistant", "", calls=[call("a"), call("never")]),
        Msg("tool", "A", call_id="a"),
        Msg("tool", "nobody asked", call_id="zzz"),
        Msg("assistant", "", calls=[call("lost")]),
        Msg("user", "hello?"),
        Msg("assistant", "here"),
    ])
    check_structure(messages)
    assert [c["id"] for m in messages for c in m.get("tool_calls") or []] == ["a"]
    assert issues == {"tool_call_without_result": 2, "tool_result_without_call": 1, "empty_assistant_turn": 1}
    kept, issues = run([Msg("user", "go"), Msg("assistant", "", calls=[call("x")]), Msg("user", "?"),
                        Msg("assistant", "ok")], keep_dangling_tool_calls=True)
    assert kept[1]["tool_calls"][0]["id"] == "x" and issues == {}


def test_failed_turns_go_with_their_results():
    messages, issues = run([
        Msg("user", "go"),
        Msg("assistant", "half", calls=[call("a"), call("b")], status="aborted"),
        Msg("tool", "A", call_id="a"),
        Msg("user", "again"),
        Msg("assistant", "", calls=[call("c")], status="error"),
        Msg("user", "once more"),
        Msg("assistant", "fine"),
    ])
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == "go\n\nagain\n\nonce more"
    assert issues == {"aborted_turn": 1, "error_turn": 1, "tool_result_of_dropped_turn": 1,
                      "tool_call_without_result": 2}


def test_alternation_system_first_no_leading_assistant_no_trailing_user():
    messages, issues = run([
        Msg("assistant", "orphan greeting"),
        Msg("system", "be brief"),
        Msg("user", "a"), Msg("user", "b"),
        Msg("assistant", "reasoning only", reasoning="think"), Msg("assistant", "more"),
        Msg("system", "late instruction"),
        Msg("assistant", "ok"),
        Msg("user", "unanswered"),
    ])
    assert messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "a\n\nb"},
        {"role": "assistant", "content": "reasoning only\n\nmore", "reasoning_content": "think"},
        {"role": "user", "content": "late instruction"},
        {"role": "assistant", "content": "ok"},
    ]
    assert issues == {"assistant_turn_without_prompt": 1, "trailing_user_turn": 1}


def test_positional_pairing_when_ids_repeat_or_are_missing():
    messages, _ = run([
        Msg("user", "go"),
        Msg("assistant", "", calls=[call("same", "f"), call(None, "g")]),
        Msg("tool", "f-result", name="f"), Msg("tool", "g-result", call_id="same"),
        Msg("assistant", "", calls=[call("same", "f")]), Msg("tool", "again", call_id="same"),
        Msg("assistant", "end"),
    ], by_position=True)
    pairs = [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]
    assert pairs == [("same", "f-result"), ("call_2", "g-result"), ("same_2", "again")]
    check_structure(messages)


def test_nothing_left_is_counted():
    assert run([Msg("user", "hi")]) == (None, {"trailing_user_turn": 1, "no_assistant_turn": 1})


def every_source(rows_mode: str) -> list:
    paths = [FIXTURES]
    if SHARED_TRACES.exists():  # turn rows repeat the whole history per turn: leave out the two 1 MB sessions
        paths += [SHARED_TRACES] if rows_mode == "conversation" else [
            p for p in SHARED_TRACES.iterdir() if p.is_dir() and p.name != "pi"]
    return paths


@pytest.mark.parametrize("rows_mode", ["conversation", "turn"])
def test_every_converted_conversation_is_well_formed(tmp_path, rows_mode):
    rows, report = rows_of(every_source(rows_mode), tmp_path, rows=rows_mode)
    assert rows and report.rows == len(rows)
    for row in rows:
        if rows_mode == "conversation":
            check_structure(row["messages"])
        else:
            assert row["completion"][0]["role"] == "assistant" and len(row["completion"]) == 1
            assert row["prompt"][-1]["role"] in ("user", "tool")
            check_structure(row["prompt"] + row["completion"], dangling_allowed=True)
