"""OpenAI chat / ShareGPT rows: string arguments, repeated or missing ids paired by position, declared tools."""

import json

from support.traces import FIXTURES, check_structure, rows_of, shared

CHAT = FIXTURES / "openai" / "chat.jsonl"


def test_rows_pair_by_position_and_get_unique_ids(tmp_path):
    rows, report = rows_of(CHAT, tmp_path)
    assert [r["session"] for r in rows] == ["shop-1", "chat#1", "chat#2"]
    for row in rows:
        check_structure(row["messages"])
    shop = rows[0]["messages"]
    ids = [c["id"] for m in shop for c in m.get("tool_calls") or []]
    assert ids == ["call_same", "call_same_2"]  # the source reused one id for two different calls
    assert [m["tool_call_id"] for m in shop if m["role"] == "tool"] == ids
    assert shop[6]["tool_calls"][0]["function"]["arguments"] == {"order_id": "A17", "amount": 30.0}
    assert [t["function"]["name"] for t in rows[0]["tools"]] == ["get_order", "refund"]  # declared, untouched
    assert rows[0]["tools"][1]["function"]["description"] == "Refund an order."
    parallel = rows[1]["messages"]
    assert [m.get("tool_call_id") for m in parallel[2:4]] == ["call_1", "call_2"]
    assert parallel[2]["content"] == '{"weight_kg": 2}'
    assert parallel[4]["tool_calls"][0]["function"]["arguments"] == {"input": "print(max(2, 5))"}
    assert report.problems == {"row_without_messages": 1}


def test_sharegpt_function_call_and_observation(tmp_path):
    rows, _ = rows_of(CHAT, tmp_path)
    sharegpt = rows[2]["messages"]
    assert [m["role"] for m in sharegpt] == ["system", "user", "assistant", "tool", "assistant"]
    assert sharegpt[2]["tool_calls"][0]["function"] == {"name": "get_order", "arguments": {"order_id": "D4"}}


def test_shared_tau_bench_and_functionary(tmp_path):
    path = shared("openai_chat", "tau-bench__gpt-4o-airline.first3.derived.json")
    data = json.loads(path.read_text())
    tool_messages = sum(1 for r in data for m in r["traj"] if m["role"] == "tool")
    calls = sum(len(m.get("tool_calls") or []) for r in data for m in r["traj"])
    rows, report = rows_of(path, tmp_path)
    assert report.sessions == 3 and len(rows) == 3
    for row in rows:
        check_structure(row["messages"])
    assert tool_messages == calls == report.tool_calls
    assert sum(1 for r in rows for m in r["messages"] if m["role"] == "tool") == tool_messages
    path = shared("openai_chat", "functionary__test_case.json")
    declared = [t["function"]["name"] for t in json.loads(path.read_text())["tools"] if t["type"] == "function"]
    rows, report = rows_of(path, tmp_path, "f.jsonl")
    check_structure(rows[0]["messages"])
    names = [t["function"]["name"] for t in rows[0]["tools"]]
    assert names[:len(declared)] == declared and "python" in names  # code_interpreter → inferred python tool
