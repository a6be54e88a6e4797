"""The local Viewer twin on real files (jsonl, parquet, csv, arrow, save_to_disk, datasets cache): every
endpoint, the strict /filter grammar against injection, the on-disk search index, the trace view, and the
MCP tools with source='local'."""

import json
import os
import sys
from pathlib import Path

import anyio
import duckdb
import pytest
from mcp import Client, StdioServerParameters

from support.common import REPO, write_jsonl
from mcp_server.viewer import export, trace_view
from mcp_server.viewer.backend import INVALID_PARAMETER, MISSING_PARAMETER, NOT_FOUND, ViewerError
from mcp_server.viewer.twin import TwinViewer
from support.standin.viewer_service import FILTER, SEARCH, STATISTICS, TEST, TRAIN

FLAT = [{k: v for k, v in row.items() if k != "messages"} for row in TRAIN]  # CSV holds no nested column


def _arrow_table(rows):
    import pyarrow as pa

    return pa.Table.from_pylist(rows)


def write_dataset(kind: str, root: Path) -> tuple[str, list[dict]]:
    """The fixture rows written as ``kind``; returns the dataset path and the train rows it holds."""
    root.mkdir(parents=True, exist_ok=True)
    if kind == "jsonl":
        write_jsonl(root / "train.jsonl", TRAIN)
        write_jsonl(root / "test.jsonl", TEST)
        return str(root), TRAIN
    if kind == "parquet":
        src = write_jsonl(root / "src" / "x.jsonl", TRAIN)
        duckdb.sql(f"COPY (SELECT * FROM read_json('{src}')) TO '{root / 'train.parquet'}' (FORMAT parquet)")
        return str(root / "train.parquet"), TRAIN
    if kind == "csv":
        lines = ["text,label,score,ratio,flag"] + [
            f"\"{r['text']}\",{r['label']},{'' if r['score'] is None else r['score']},{r['ratio']},"
            f"{'' if r['flag'] is None else str(r['flag']).lower()}" for r in FLAT]
        (root / "train.csv").write_text("\n".join(lines) + "\n")
        return str(root / "train.csv"), FLAT
    if kind == "arrow":
        import pyarrow.ipc as ipc

        table = _arrow_table(TRAIN)
        with ipc.new_stream(str(root / "train.arrow"), table.schema) as writer:
            writer.write_table(table)
        return str(root / "train.arrow"), TRAIN
    if kind == "save_to_disk":
        from datasets import Dataset, DatasetDict

        DatasetDict({"train": Dataset.from_list(TRAIN), "test": Dataset.from_list(TEST)}).save_to_disk(str(root / "dd"))
        return str(root / "dd"), TRAIN
    if kind == "datasets_cache":
        import pyarrow.ipc as ipc

        leaf = root / "json" / "default-0123" / "0.0.0" / "abc"
        leaf.mkdir(parents=True)
        (leaf / "dataset_info.json").write_text("{}")
        for split, rows in (("train", TRAIN), ("test", TEST)):
            table = _arrow_table(rows)
            with ipc.new_stream(str(leaf / f"json-{split}.arrow"), table.schema) as writer:
                writer.write_table(table)
        return str(root / "json"), TRAIN
    raise ValueError(kind)


@pytest.fixture
def twin(tmp_path):
    return TwinViewer(index_root=tmp_path / "index")


@pytest.fixture
def data(tmp_path):
    return write_dataset("jsonl", tmp_path / "data")[0]


def ids(page) -> list[int]:
    return [r.row_idx for r in page.rows]


@pytest.mark.parametrize("kind", ["jsonl", "parquet", "csv", "arrow", "save_to_disk", "datasets_cache"])
def test_every_endpoint_on_each_format(twin, tmp_path, kind):
    dataset, rows = write_dataset(kind, tmp_path / kind)
    splits = [s.split for s in twin.splits(dataset).splits]
    assert splits == (["train", "test"] if kind in ("jsonl", "save_to_disk", "datasets_cache") else ["train"])
    assert twin.is_valid(dataset).model_dump() == {"viewer": True, "preview": True, "search": True, "filter": True,
                                                   "statistics": True}
    page = twin.rows(dataset, "default", "train", offset=2, length=3)
    assert ids(page) == [2, 3, 4] and [r.row for r in page.rows] == rows[2:5] and page.num_rows_total == 12
    assert [f.name for f in page.features] == list(rows[0]) and page.num_rows_per_page == 100
    assert len(twin.first_rows(dataset, "default", "train").rows) == 12
    found = twin.search(dataset, "default", "train", "fox")
    assert ids(found) == [0, 5] and found.rows[1].row == rows[5] and found.num_rows_total == 2
    picked = twin.filter(dataset, "default", "train", where='"score" > 5')
    assert ids(picked) == [1, 3, 7, 9, 10] and picked.num_rows_total == 5
    expected = [s for s in STATISTICS["train"]["statistics"] if s["column_name"] in rows[0]]
    assert twin.statistics(dataset, "default", "train").model_dump(mode="json")["statistics"] == expected
    size = twin.size(dataset).size
    assert size.splits[0].num_rows == 12 and size.dataset.num_bytes_parquet_files > 0


def test_filter_grammar_and_ordering(twin, data):
    for (split, where, orderby), expected in FILTER.items():
        page = twin.filter(data, "default", split, where=where, orderby=orderby)
        assert ids(page) == expected and page.num_rows_total == len(expected), (where, orderby)
    page = twin.filter(data, "default", "train", where='"score" >= 3', orderby='"score" DESC', offset=2, length=3)
    assert ids(page) == [7, 1, 9] and page.num_rows_total == 8
    where = "\"text\" = 'Fresh basil makes the sauce' OR \"text\" = 'it''s'"
    quoted = twin.filter(data, "default", "train", where=where)
    assert ids(quoted) == [11]
    assert ids(twin.filter(data, "default", "train", where='NOT ("score" <> 5) AND "flag" != TRUE')) == [5]


@pytest.mark.parametrize("where", [
    '"score"=1; DROP TABLE x', '"score"=(SELECT 1)', "lower(\"label\")='x'", '"score" = 1 --', '"score" = 1 /* c */',
    "score > 1", '"score" IN (1, 2)', "\"label\" LIKE 't%'", '"score" BETWEEN 1 AND 3', '"nope" = 1',
    '"score" = NULL', '"score" + 1 > 2', "\"label\" = 'x", '("score" > 1', '"score" > 1)', '"score"',
    "1 = 1 UNION SELECT * FROM duckdb_settings()", '"score" > 1 OR read_csv(\'/etc/passwd\') IS NULL',
])
def test_filter_rejects_everything_outside_the_grammar(twin, data, where):
    with pytest.raises(ViewerError) as err:
        twin.filter(data, "default", "train", where=where)
    assert err.value.code == INVALID_PARAMETER and err.value.status == 422
    assert "double-quoted" in err.value.fix and '"score"' in err.value.fix  # what is allowed, and the columns
    assert twin.rows(data, "default", "train", 0, 1).num_rows_total == 12  # nothing ran


@pytest.mark.parametrize("orderby", ['"score" DESC; DROP TABLE x', "random()", "score", '"score" DESC NULLS', '"x"'])
def test_orderby_rejects_everything_but_columns(twin, data, orderby):
    with pytest.raises(ViewerError) as err:
        twin.filter(data, "default", "train", orderby=orderby)
    assert err.value.code == INVALID_PARAMETER


def test_filter_type_mismatch_is_an_invalid_parameter(twin, data):
    with pytest.raises(ViewerError) as err:
        twin.filter(data, "default", "train", where="\"score\" > 'many'")
    assert err.value.code == INVALID_PARAMETER and '"score" (int64)' in err.value.fix


def test_search_rare_common_stems_pages_and_nested_text(twin, data):
    for (split, query), expected in SEARCH.items():
        page = twin.search(data, "default", split, query)
        assert ids(page) == expected and page.num_rows_total == len(expected), query
    page = twin.search(data, "default", "train", "server", offset=1, length=2)
    assert ids(page) == [3, 4] and page.num_rows_total == 6 and page.rows[0].row == TRAIN[3]
    assert ids(twin.search(data, "default", "train", "Brief!")) == [i for i in range(12) if i % 3]  # in messages
    with pytest.raises(ViewerError) as err:
        twin.search(data, "default", "train", "  ")
    assert err.value.code == MISSING_PARAMETER


def test_search_index_is_built_once_per_revision(tmp_path):
    path = write_jsonl(tmp_path / "d" / "train.jsonl", TRAIN)
    twin = TwinViewer(index_root=tmp_path / "index")
    index, seconds = twin.search_index(str(path), "default", "train")
    assert seconds > 0 and index.path.is_dir()
    stamp = index.path.stat().st_mtime_ns
    assert twin.search_index(str(path), "default", "train")[1] == 0
    again = TwinViewer(index_root=tmp_path / "index")  # a new process reuses the index on disk
    assert ids(again.search(str(path), "default", "train", "fox")) == [0, 5]
    assert again.search_index(str(path), "default", "train")[1] == 0
    assert index.path.stat().st_mtime_ns == stamp
    write_jsonl(path, TRAIN + [{**TRAIN[0], "text": "a red fox"}])  # a new revision: rebuilt, old one removed
    new_index, seconds = again.search_index(str(path), "default", "train")
    assert seconds > 0 and new_index.path != index.path and not index.path.parent.exists()
    assert ids(again.search(str(path), "default", "train", "fox")) == [0, 5, 12]


def test_many_rows_across_row_groups_and_files(twin, tmp_path, monkeypatch):
    monkeypatch.setattr(export, "ROW_GROUPS_PER_PART", 1)  # 6,000 rows → several parts of one row group each
    folder = tmp_path / "big"
    rows = [{"i": i, "text": f"row {i} " + ("needle" if i % 997 == 0 else "hay"), "group": i % 7} for i in range(6000)]
    write_jsonl(folder / "train-00000-of-00002.jsonl", rows[:3500])
    write_jsonl(folder / "train-00001-of-00002.jsonl", rows[3500:])
    write_jsonl(folder / "notes" / "validation.jsonl", rows[:5])
    dataset = str(folder)
    assert [s.split for s in twin.splits(dataset).splits] == ["train", "validation"]
    parts = twin.split_state(dataset, "default", "train").info.parts
    assert len(parts) >= 2 and parts[0].first == 0 and sum(p.rows for p in parts) == 6000
    assert all(b.first == a.first + a.rows for a, b in zip(parts, parts[1:]))  # contiguous row_idx ranges
    page = twin.rows(dataset, "default", "train", offset=4090, length=100)
    assert ids(page) == list(range(4090, 4190)) and [r.row["i"] for r in page.rows] == list(range(4090, 4190))
    found = twin.search(dataset, "default", "train", "needle")
    assert ids(found) == [i for i in range(6000) if i % 997 == 0] and found.rows[3].row["i"] == 2991
    tail = twin.filter(dataset, "default", "train", where='"group" = 3', orderby='"i" DESC', offset=10, length=5)
    expected = [i for i in range(5999, -1, -1) if i % 7 == 3][10:15]
    assert ids(tail) == expected and [r.row["i"] for r in tail.rows] == expected
    assert tail.num_rows_total == sum(1 for i in range(6000) if i % 7 == 3)
    where = '"group" = 3 OR "text" = \'row 5 hay\''
    middle = twin.filter(dataset, "default", "train", where=where, offset=290, length=30)
    expected = [i for i in range(6000) if i % 7 == 3 or i == 5][290:320]  # dataset order across parts
    assert ids(middle) == expected and [r.row["i"] for r in middle.rows] == expected
    stats = {s.column_name: s for s in twin.statistics(dataset, "default", "train").statistics}
    counts = [sum(1 for i in range(6000) if i % 7 == g) for g in range(7)]
    histogram = stats["group"].column_statistics.histogram  # integer bins of 1; the last one is closed: [5, 6]
    assert histogram.bin_edges == [0, 1, 2, 3, 4, 5, 6] and histogram.hist == counts[:5] + [counts[5] + counts[6]]


def test_scattered_pages_through_small_row_groups_and_a_tiny_group_cache(twin, tmp_path, monkeypatch):
    """Rows are read group by group (only the groups holding them); a cache smaller than one page must still give
    every row, in order; string filters on the in-memory scan table (short strings as sorted ENUMs) answer as the
    strings would, ranges and unknown values included."""
    from mcp_server.viewer import twin as twin_module

    monkeypatch.setattr(export, "ROW_GROUP_BYTES", "4KB")  # groups of a few dozen rows
    monkeypatch.setattr(twin_module, "GROUP_CACHE", 3)
    folder = tmp_path / "scattered"
    kinds = ["alpha", "beta", "gamma", "delta"]
    rows = [{"i": i, "kind": kinds[(i * 7) % 4], "score": (i * 37) % 101, "text": f"row {i} " + "x" * 80}
            for i in range(3000)]
    write_jsonl(folder / "train.jsonl", rows)
    dataset = str(folder)
    state = twin.split_state(dataset, "default", "train")
    assert sum(len(p.groups) for p in state.info.parts) > 40
    page = twin.filter(dataset, "default", "train", where='"kind" = \'beta\'', orderby='"score" DESC', length=100)
    expected = sorted((r for r in rows if r["kind"] == "beta"), key=lambda r: (-r["score"], r["i"]))[:100]
    assert [r.row["i"] for r in page.rows] == [r["i"] for r in expected] and ids(page) == [r["i"] for r in expected]
    assert all(r.row["text"] == rows[r.row_idx]["text"] for r in page.rows)
    for where, match in (('"kind" > \'b\'', lambda k: k > "b"), ('"kind" = \'zeta\'', lambda k: k == "zeta"),
                         ('"kind" <= \'beta\'', lambda k: k <= "beta"), ('"kind" != \'gamma\'', lambda k: k != "gamma")):
        got = twin.filter(dataset, "default", "train", where=where, length=100)
        want = [r["i"] for r in rows if match(r["kind"])]
        assert got.num_rows_total == len(want) and ids(got) == want[:100], where


def test_bad_requests(twin, data, tmp_path):
    cases = [(lambda: twin.rows(data, "default", "train", 0, 101), INVALID_PARAMETER),
             (lambda: twin.rows(data, "default", "train", -1, 10), INVALID_PARAMETER),
             (lambda: twin.rows(data, "default", "validation"), NOT_FOUND),
             (lambda: twin.rows(data, "other", "train"), NOT_FOUND),
             (lambda: twin.rows(str(tmp_path / "missing.jsonl"), "default", "train"), NOT_FOUND)]
    for call, code in cases:
        with pytest.raises(ViewerError) as err:
            call()
        assert err.value.code == code and err.value.fix
    with pytest.raises(ViewerError, match="use one of: train, test"):
        twin.rows(data, "default", "validation")


def test_trace_view_of_tool_calls(twin, tmp_path):
    def call(name, arguments, call_id=None):
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}

    rows = [
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                      {"role": "assistant", "content": "", "tool_calls": [call("bash", {"command": "ls"}, "c1")]},
                      {"role": "tool", "content": "ok", "tool_call_id": "c1"},
                      {"role": "assistant", "content": "", "tool_calls": [call("bash", {"command": "cat a"}, "c2")]},
                      {"role": "tool", "content": "ok", "tool_call_id": "c2"},
                      {"role": "assistant", "content": "done"}]},
        {"messages": [{"role": "user", "content": "u"},
                      {"role": "assistant", "content": "", "tool_calls": [call("read", '{"path": "x", "n": 2}'),
                                                                          call("bash", {"command": "pwd"})]},
                      {"role": "tool", "content": "x"}]},
        {"messages": [{"role": "user", "content": "only a question"}]},
    ]
    dataset = str(write_jsonl(tmp_path / "traces.jsonl", rows))
    view = trace_view(twin, dataset, "default", "train")
    assert view.role_sequences == {"system>user>(assistant>tool)×2>assistant": 1, "user>assistant>tool": 1, "user": 1}
    assert view.tool_calls["bash"].calls == 3 and view.tool_calls["bash"].argument_keys == {"command": 3}
    assert view.tool_calls["bash"].arguments_as_dict == 3 and view.tool_calls["read"].arguments_as_string == 1
    assert view.tool_calls["read"].argument_keys == {"path": 1, "n": 1}
    assert view.calls_without_result == 1 and view.tool_calls["bash"].without_result == 1
    assert view.rows_without_assistant == [2] and view.rows_scanned == 3
    assert any("JSON string" in n for n in view.notes)


def test_mcp_tools_with_source_local(tmp_path):
    long_rows = [{"text": "word " * 3000, "n": i} for i in range(30)]
    dataset = str(write_jsonl(tmp_path / "long" / "train.jsonl", long_rows))
    fixture = write_dataset("jsonl", tmp_path / "fixture")[0]
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "serve"],
                                   env=os.environ.copy(), cwd=str(REPO))

    async def main():
        async with Client(params) as client:
            out = {}
            out["rows"] = await client.call_tool("viewer_rows", {"source": "local", "dataset": dataset, "length": 30})
            out["filter"] = await client.call_tool("viewer_filter", {"source": "local", "dataset": fixture,
                                                                     "where": '"score" > 5', "orderby": '"score"'})
            out["bad"] = await client.call_tool("viewer_filter", {"source": "local", "dataset": fixture,
                                                                  "where": "score > 5"})
            out["search"] = await client.call_tool("viewer_search", {"source": "local", "dataset": fixture,
                                                                     "query": "fox"})
            out["stats"] = await client.call_tool("viewer_statistics", {"source": "local", "dataset": fixture})
            out["splits"] = await client.call_tool("viewer_splits", {"source": "local", "dataset": fixture})
            out["size"] = await client.call_tool("viewer_size", {"source": "local", "dataset": fixture})
            out["traces"] = await client.call_tool("viewer_traces", {"source": "local", "dataset": fixture})
            return out

    out = anyio.run(main)
    for name, result in out.items():
        if name != "bad":
            assert not result.is_error, (name, result.content[0].text)
            assert len(json.dumps(result.structured_content)) < 9000, name
    page = out["rows"].structured_content
    assert page["rows"][0]["truncated_cells"] == ["text"] and page["rows"][0]["row"]["text"].endswith("…")
    assert "cut" in page["note"] and page["num_rows_total"] == 30
    assert [r["row_idx"] for r in out["filter"].structured_content["rows"]] == [9, 1, 7, 3, 10]
    assert out["bad"].is_error and 'write "score"' in out["bad"].content[0].text
    assert [r["row_idx"] for r in out["search"].structured_content["rows"]] == [0, 5]
    assert out["stats"].structured_content["num_examples"] == 12
    assert [s["split"] for s in out["splits"].structured_content["splits"]] == ["train", "test"]
    assert out["size"].structured_content["size"]["dataset"]["num_rows"] == 15
    assert out["traces"].structured_content["rows_scanned"] == 12
