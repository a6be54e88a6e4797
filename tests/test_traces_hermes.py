"""Hermes Agent sessions: the CLI session log, the gateway transcript and a `hermes sessions export` line —
messages, tool calls paired with results by id, reasoning, the stored system prompt and tools, detection,
and a file that is not a Hermes session."""

import json

import pytest

from mcp_server.errors import TraceError
from mcp_server.traces import ConvertOptions, convert, find_sources, sniff
from support.traces import FIXTURES, check_structure, rows_of

HERMES = FIXTURES / "hermes"
LOG = HERMES / "session_20260305_091523_a1b2c3.json"
TRANSCRIPT = HERMES / "20260306_101010_d4e5f6a7.jsonl"
EXPORT = HERMES / "hermes_session_20260307_080000_0a1b2c.jsonl"


def calls_of(messages):
    return [(c["id"], c["function"]["name"], c["function"]["arguments"]) for m in messages for c in m.get("tool_calls") or []]


def test_cli_log_keeps_prompt_tools_calls_results_and_reasoning(tmp_path):
    raw = json.loads(LOG.read_text())
    rows, report = rows_of(LOG, tmp_path)
    (row,) = rows
    messages = row["messages"]
    check_structure(messages)
    assert row["session"] == raw["session_id"] and report.formats == {"hermes": 1} and report.sessions == 1
    assert messages[0] == {"role": "system", "content": raw["system_prompt"]}
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        "How many Python files are in this repo?", "Show me the first line of setup.py."]
    assert calls_of(messages) == [("call_h1", "terminal", {"command": "find . -name '*.py' | wc -l"}),
                                  ("call_h2", "read_file", {"path": "setup.py"})]
    results = [(m["tool_call_id"], m["name"], m["content"]) for m in messages if m["role"] == "tool"]
    assert results == [("call_h1", "terminal", '{"output": "12", "exit_code": 0}'),
                       ("call_h2", "read_file", "from setuptools import setup")]
    assert messages[2]["reasoning_content"] == "Count them with find." and report.thinking == {"kept": 1, "dropped": 0}
    assert [t["function"]["name"] for t in row["tools"]] == ["terminal", "read_file"]  # the stored schemas
    assert row["tools"][0]["function"]["parameters"]["required"] == ["command"]
    assert messages[-1]["content"] == "It is `from setuptools import setup`." and report.dropped == {}


def test_gateway_transcript_skips_the_meta_line_and_takes_its_model(tmp_path):
    rows, report = rows_of(TRANSCRIPT, tmp_path, rows="turn", model="deepseek")
    assert [r["completion"][-1]["content"] for r in rows] == ["", "/var/log uses 1.2 GB."]  # the meta's model
    rows, report = rows_of(TRANSCRIPT, tmp_path, "conv.jsonl", thinking="drop")
    messages = rows[0]["messages"]
    check_structure(messages)
    assert rows[0]["session"] == "20260306_101010_d4e5f6a7" and messages[0]["role"] == "user"
    assert calls_of(messages) == [("call_g1", "terminal", {"command": "du -sh /var/log"})]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_g1", "name": "terminal",
                           "content": '{"output": "1.2G\\t/var/log", "exit_code": 0}'}
    assert "reasoning_content" not in messages[1] and report.thinking == {"kept": 0, "dropped": 1}
    assert report.files[0].skipped_types == {"session_meta": 1}


def test_export_line_is_one_session_and_harness_context_can_be_dropped(tmp_path):
    rows, report = rows_of(EXPORT, tmp_path, drop_harness_context=True)
    messages = rows[0]["messages"]
    check_structure(messages)
    assert rows[0]["session"] == "20260307_080000_0a1b2c" and messages[0] == {"role": "user",
                                                                               "content": "Run the unit tests."}
    assert calls_of(messages) == [("call_e1", "terminal", {"command": "pytest -q"})]
    assert messages[1]["reasoning_content"] == "pytest -q is enough." and messages[-1]["content"] == "All 8 tests pass."
    assert report.dropped == {"harness_context": 1}


def test_detection():
    assert {sniff(p) for p in (LOG, TRANSCRIPT, EXPORT)} == {"hermes"}
    sources, skipped = find_sources([HERMES])
    assert sorted(p.name for fmt, p in sources if fmt == "hermes") == sorted(p.name for p in (LOG, TRANSCRIPT, EXPORT))
    assert skipped == []


def test_a_file_that_is_not_a_hermes_session_says_so(tmp_path):
    bad = tmp_path / "session_broken.json"
    bad.write_text('{"session_id": "x", "messages": [{"role": "user", "content": "hi"}')  # cut short
    assert sniff(bad) is None
    with pytest.raises(TraceError, match="No agent sessions were found"):
        rows_of(bad, tmp_path)
    with pytest.raises(TraceError, match="Not a Hermes Agent session") as err:  # read as Hermes: the reason
        convert([str(bad)], tmp_path / "rows.jsonl", ConvertOptions(format="hermes"))
    assert "session_broken.json" in str(err.value)
    _, report = rows_of(bad, tmp_path, "again.jsonl", format="hermes")
    assert report.files[0].malformed_lines == [1] and report.problems["unreadable_source"] == 1
