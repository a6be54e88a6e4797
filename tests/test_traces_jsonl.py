"""Tolerant JSON Lines reading: malformed lines are counted and reported, never fatal."""

from pathlib import Path

from mcp_server.traces.jsonl import decode_line, read_jsonl
from mcp_server.traces.stats import FileReport
from support.traces import raw_lines, shared


def read(path: Path) -> tuple[list[tuple[int, dict]], FileReport]:
    report = FileReport(path=str(path), format="test")
    return list(read_jsonl(path, report)), report


def test_two_objects_on_one_line_are_both_read_and_the_line_is_reported(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}{"c": 3}\n\n{"d": 4}\n')
    entries, report = read(path)
    assert entries == [(1, {"a": 1}), (2, {"b": 2}), (2, {"c": 3}), (4, {"d": 4})]
    assert report.malformed_lines == [2] and report.issues == {"malformed_line": 1} and report.lines == 4


def test_truncated_and_non_object_lines_are_reported(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"ok": 1}\n{"cut": [1, 2\n"just a string"\n[1, 2]\n\xff\xfe{"bad utf8": 1}\n{"last": true}')
    entries, report = read(path)
    assert [e for _, e in entries] == [{"ok": 1}, {"last": True}]
    assert report.malformed_lines == [2, 3, 4, 5]


def test_decode_line_recovers_what_precedes_the_damage():
    assert decode_line('{"a": 1} {"b": 2') == ([{"a": 1}], False)
    assert decode_line('{"a": 1}') == ([{"a": 1}], True)


def test_the_shared_pi_session_with_a_glued_line_reports_line_440():
    path = shared("pi", "pi-mono__session-d5dde00.v1.jsonl")
    entries, report = read(path)
    assert report.malformed_lines == [440]
    glued = [e for n, e in entries if n == 440]
    assert len(glued) == 2 and [e["message"]["role"] for e in glued] == ["assistant", "user"]
    assert len(entries) == len(raw_lines(path))
