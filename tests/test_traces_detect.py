"""Format detection per file and per folder."""

import pytest

from mcp_server.errors import TraceError
from mcp_server.traces import find_sources, sniff
from support.traces import FIXTURES, SHARED_TRACES


def test_fixture_formats_are_recognised(tmp_path):
    sources, skipped = find_sources([FIXTURES])
    found = {(fmt, p.relative_to(FIXTURES).parts[0]) for fmt, p in sources}
    assert found == {("pi", "pi"), ("claude-code", "claude_code"), ("codex", "codex"), ("opencode", "opencode"),
                     ("openai", "openai"), ("hermes", "hermes"), ("droid", "droid")}
    assert [p.name for fmt, p in sources if fmt == "opencode"] == ["storage"] and skipped == []


def test_shared_files_are_recognised_by_their_folder():
    if not SHARED_TRACES.exists():
        pytest.skip(f"shared trace data not found at {SHARED_TRACES}")
    folder_format = {"pi": "pi", "claude_code": "claude-code", "codex": "codex", "opencode": "opencode",
                     "openai_chat": "openai"}
    sources, skipped = find_sources([SHARED_TRACES])
    assert skipped == [] and len(sources) == 19
    for fmt, path in sources:
        assert fmt == folder_format[path.relative_to(SHARED_TRACES).parts[0]], path


def test_unknown_files_are_skipped_and_reported(tmp_path):
    (tmp_path / "notes.json").write_text('{"hello": "world"}')
    (tmp_path / "data.jsonl").write_text('{"x": 1}\n')
    (tmp_path / "readme.txt").write_text("hi")
    assert sniff(tmp_path / "notes.json") is None
    with pytest.raises(TraceError, match="No agent sessions were found"):
        find_sources([tmp_path])
    sources, skipped = find_sources([tmp_path, FIXTURES / "pi" / "tree.v3.jsonl"])
    assert [fmt for fmt, _ in sources] == ["pi"] and len(skipped) == 2


def test_missing_path_and_explicit_format(tmp_path):
    with pytest.raises(TraceError, match="does not exist"):
        find_sources([tmp_path / "nope"])
    sources, _ = find_sources([FIXTURES / "openai" / "chat.jsonl"], "openai")
    assert sources == [("openai", FIXTURES / "openai" / "chat.jsonl")]
