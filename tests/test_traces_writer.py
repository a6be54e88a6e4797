"""Output: JSON Lines or Parquet loadable with datasets, stats beside it, and nothing half-written."""

import json

import pytest

from mcp_server.errors import TraceError
from mcp_server.traces import ConvertOptions, convert
from mcp_server.traces import writer
from support.traces import FIXTURES


def test_jsonl_and_parquet_load_with_datasets(tmp_path):
    from datasets import load_dataset

    for name in ("rows.jsonl", "rows.parquet"):
        report = convert([FIXTURES], tmp_path / name)
        builder = "parquet" if name.endswith(".parquet") else "json"
        ds = load_dataset(builder, data_files=str(tmp_path / name), split="train")
        assert len(ds) == report.rows and {"messages", "tools", "source", "format", "session", "part"} <= set(ds.column_names)
        call = next(c for row in ds for m in row["messages"] for c in m.get("tool_calls") or [])
        assert isinstance(call["function"]["arguments"], dict)
        assert json.loads((tmp_path / name.replace(".jsonl", ".stats.json").replace(".parquet", ".stats.json"))
                          .read_text())["rows"] == report.rows


def test_a_failure_while_writing_leaves_nothing_behind(tmp_path, monkeypatch):
    out = tmp_path / "data" / "rows.jsonl"

    def broken(rows, handle):
        handle.write('{"messages": [')  # half a row, then the disk "fails"
        raise OSError("disk full")

    monkeypatch.setattr(writer, "_write_jsonl", broken)
    with pytest.raises(OSError, match="disk full"):
        convert([FIXTURES], out)
    assert not out.exists() and list(out.parent.iterdir()) == []


def test_a_failed_run_keeps_the_previous_output(tmp_path, monkeypatch):
    out = tmp_path / "rows.jsonl"
    convert([FIXTURES], out)
    before = out.read_text()

    def broken(rows, handle):
        raise RuntimeError("boom")

    monkeypatch.setattr(writer, "_write_jsonl", broken)
    with pytest.raises(RuntimeError):
        convert([FIXTURES], out, ConvertOptions(thinking="drop"))
    assert out.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl", "rows.stats.json"]


def test_output_paths_are_checked_before_any_work(tmp_path):
    with pytest.raises(TraceError, match="suffix '.csv'"):
        convert([FIXTURES], tmp_path / "rows.csv")
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(TraceError, match="is a folder"):
        convert([FIXTURES], tmp_path / "dir.jsonl")


def test_no_rows_is_an_error_that_names_the_reasons(tmp_path):
    with pytest.raises(TraceError, match="No rows were left") as err:
        convert([FIXTURES / "pi"], tmp_path / "rows.jsonl", ConvertOptions(min_assistant_turns=500))
    assert "min_assistant_turns" in str(err.value) and not (tmp_path / "rows.jsonl").exists()
