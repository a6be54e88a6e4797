"""Factory Droid sessions: session_start + message lines with Anthropic-style blocks — messages, parallel tool
calls paired with their results by id, thinking, skipped line types, detection, and a file without a
session_start line."""

import json

import pytest

from mcp_server.errors import TraceError
from mcp_server.traces import ConvertOptions, convert, find_sources, sniff
from support.traces import FIXTURES, check_structure, raw_lines, rows_of

DROID = FIXTURES / "droid"
SESSION = DROID / "2b7c8d4e-1f2a-4b3c-9d8e-7f6a5b4c3d2e.jsonl"


def test_session_becomes_one_conversation_with_paired_calls(tmp_path):
    lines = raw_lines(SESSION)
    uses = [b["id"] for line in lines if line.get("type") == "message" for b in line["message"]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"]
    rows, report = rows_of(SESSION, tmp_path)
    (row,) = rows
    messages = row["messages"]
    check_structure(messages)
    assert row["session"] == lines[0]["id"] and report.formats == {"droid": 1} and report.sessions == 1
    assert messages[0] == {"role": "user", "content": "The date parser rejects ISO week dates. Fix it."}
    turn = messages[1]
    assert turn["content"] == "Looking for the parser." and turn["reasoning_content"] == "Find the parser first."
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in turn["tool_calls"]] == [
        ("toolu_d1", "Grep", {"pattern": "def parse_date", "path": "."}), ("toolu_d2", "Read", {"file_path": "dates.py"})]
    # the results came back in the other order; they follow the turn in call order
    assert [(m["tool_call_id"], m["name"]) for m in messages[2:4]] == [("toolu_d1", "Grep"), ("toolu_d2", "Read")]
    assert messages[3]["content"].startswith("12 def parse_date(text):")  # text blocks of a result, joined
    assert messages[5] == {"role": "tool", "tool_call_id": "toolu_d3", "name": "Execute",
                           "content": "1 failed: test_iso_week"}  # an errored result is still an observation
    assert [c["id"] for m in messages for c in m.get("tool_calls") or []] == uses
    assert messages[7] == {"role": "user", "content": "Go ahead."}  # a plain string content
    assert messages[-1]["content"] == "Added the %G-W%V-%u format; the test passes now."
    assert report.files[0].skipped_types == {"todo_state": 1} and report.dropped == {} and report.problems == {}
    assert {t["function"]["name"] for t in row["tools"]} == {"Grep", "Read", "Execute"}  # inferred: Droid stores none


def test_thinking_can_be_dropped(tmp_path):
    rows, report = rows_of(SESSION, tmp_path, thinking="drop")
    assert all("reasoning_content" not in m for m in rows[0]["messages"]) and report.thinking == {"kept": 0, "dropped": 1}


def test_detection(tmp_path):
    assert sniff(SESSION) == "droid"
    sources, skipped = find_sources([DROID])
    assert sources == [("droid", SESSION)] and skipped == []


def test_malformed_lines_are_counted_and_a_file_without_session_start_is_refused(tmp_path):
    damaged = tmp_path / "damaged.jsonl"
    lines = SESSION.read_text().splitlines()
    damaged.write_text("\n".join(lines[:3] + ['{"type": "message", "id": "cut', "not json"] + lines[3:]) + "\n")
    rows, report = rows_of(damaged, tmp_path)
    assert report.files[0].malformed_lines == [4, 5] and len(rows) == 1
    check_structure(rows[0]["messages"])
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(lines[1:]) + "\n")
    assert sniff(headless) != "droid"
    with pytest.raises(TraceError, match="Not a Factory Droid session \\(no session_start line\\)"):
        convert([str(headless)], tmp_path / "rows.jsonl", ConvertOptions(format="droid"))
    assert json.loads(lines[0])["type"] == "session_start"
