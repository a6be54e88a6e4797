"""Helpers shared by the tests/test_traces_*.py files: fixture paths, converting to rows, and the
structural checks every converted conversation must pass (written independently of the converter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server.traces import ConvertOptions, convert

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
SHARED_TRACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"


def shared(*parts: str) -> Path:
    """A path under ../shared/data/traces, or skip the test when the shared data is absent."""
    path = SHARED_TRACES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared trace data not found at {path} (the repo's sibling ../shared is absent)")
    return path


def rows_of(paths, tmp_path: Path, name: str = "out.jsonl", **options):
    """(rows, report) of converting ``paths`` with ``options``."""
    out = tmp_path / name
    report = convert([str(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])], out,
                     ConvertOptions(**options), allow_empty=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return rows, report


def raw_lines(path: Path) -> list[dict]:
    """Every JSON object in a JSON Lines file, both objects of a glued line included (an independent scan)."""
    decoder, out = json.JSONDecoder(), []
    for line in path.read_text(encoding="utf-8").splitlines():
        line, pos = line.strip(), 0
        while pos < len(line):
            try:
                obj, pos = decoder.raw_decode(line, pos)
            except ValueError:
                break
            out.append(obj)
    return out


def check_structure(messages: list[dict], dangling_allowed: bool = False) -> None:
    """Roles alternate as chat templates need, and every tool message answers a call of the turn before it."""
    assert messages, "empty conversation"
    body = messages[1:] if messages[0]["role"] == "system" else messages
    assert all(m["role"] != "system" for m in body), "system message after the start"
    assert body[0]["role"] == "user", f"starts with {body[0]['role']}"
    assert messages[-1]["role"] in ("assistant", "tool")
    open_calls: list[str] = []
    previous = None
    for m in body:
        role = m["role"]
        assert isinstance(m.get("content"), str)
        if role == "tool":
            assert previous in ("assistant", "tool") and m["tool_call_id"] in open_calls, m
            open_calls.remove(m["tool_call_id"])
        else:
            assert dangling_allowed or not open_calls, f"calls without results: {open_calls}"
            assert role != previous, f"two {role} messages in a row"
            open_calls = []
        if role == "assistant":
            calls = m.get("tool_calls") or []
            assert m["content"].strip() or calls, "empty assistant turn"
            for call in calls:
                assert call["type"] == "function" and isinstance(call["function"]["arguments"], dict)
            open_calls = [c["id"] for c in calls]
            assert len(set(open_calls)) == len(open_calls)
        previous = role
    assert dangling_allowed or not open_calls
    ids = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert len(ids) == len(set(ids)), "call ids repeat within the conversation"
