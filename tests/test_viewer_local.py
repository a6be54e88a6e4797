import json

import duckdb
import pytest

from support.common import short_conversation, write_jsonl
from mcp_server.errors import DataError
from mcp_server.viewer import inspect_dataset


def test_conversations_with_tools(tmp_path):
    rows = [{"messages": short_conversation(i), "tools": [{"type": "function", "function": {"name": "bash"}}]}
            for i in range(4)]
    report = inspect_dataset([str(write_jsonl(tmp_path / "a.jsonl", rows))])
    assert report.num_rows == 4 and report.format == "messages"
    assert {c.name for c in report.columns} == {"messages", "tools"}
    stats = report.conversations
    assert stats.roles == {"system": 4, "user": 4, "assistant": 8, "tool": 4}
    assert stats.tool_calls == {"bash": 4} and stats.tool_results == 4 and stats.calls_without_result == 0
    assert stats.messages_per_row == {"min": 5, "mean": 5.0, "max": 5}
    assert report.notes == [] and json.loads(report.first_row)["messages"][1]["role"] == "user"


def test_problems_become_notes(tmp_path):
    rows = [{"messages": [{"role": "user", "content": "hi"},
                          {"role": "assistant", "content": "", "tool_calls": [
                              {"type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}]}]},
            {"messages": [{"role": "user", "content": "only a question"}]}]
    report = inspect_dataset([str(write_jsonl(tmp_path / "b.jsonl", rows))])
    notes = " | ".join(report.notes)
    assert "rows without an assistant turn (first: [1])" in notes
    assert "1 tool calls carry arguments as a JSON string" in notes
    assert "1 tool calls have no tool result" in notes
    assert "no tools column" in notes


def test_parquet_and_folders(tmp_path):
    src = write_jsonl(tmp_path / "src.jsonl", [{"messages": short_conversation(i)} for i in range(3)])
    (tmp_path / "d").mkdir()
    duckdb.sql(f"COPY (SELECT * FROM read_json_auto('{src}')) TO '{tmp_path / 'd' / 'x.parquet'}' (FORMAT parquet)")
    report = inspect_dataset([str(tmp_path / "d")])
    assert report.num_rows == 3 and report.files[0].endswith("x.parquet") and report.conversations.tool_results == 3


def test_prompt_completion_and_unknown_shapes(tmp_path):
    pc = write_jsonl(tmp_path / "pc.jsonl", [{"prompt": "q", "completion": "a"}])
    assert inspect_dataset([str(pc)]).format == "prompt_completion"
    text = write_jsonl(tmp_path / "t.jsonl", [{"text": "just text"}])
    report = inspect_dataset([str(text)])
    assert report.format is None and "neither a 'messages' column" in report.notes[0]


def test_missing_path():
    with pytest.raises(DataError, match="does not exist"):
        inspect_dataset(["/no/such/file.jsonl"])
