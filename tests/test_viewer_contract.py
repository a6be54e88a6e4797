"""One contract, two backends: the same assertions run against the HF backend (through the loopback
stand-in's hand-written answers) and against the local twin over the same rows written to files.
Rows, row_idx, totals, features, statistics and error codes must agree; scores are never compared."""

from dataclasses import dataclass

import pytest

from support.common import write_jsonl
from mcp_server.viewer import ViewerBackend, trace_view
from mcp_server.viewer.backend import INVALID_PARAMETER, MISSING_PARAMETER, NOT_FOUND, ViewerError
from mcp_server.viewer.hf import HfViewer
from mcp_server.viewer.twin import TwinViewer
from support.standin.viewer_service import (
    DATASET,
    FEATURES,
    FILTER,
    IS_VALID,
    ROWS,
    SEARCH,
    STATISTICS,
    TOKEN,
    ViewerStandIn,
)


@dataclass
class Subject:
    backend: ViewerBackend
    dataset: str


@pytest.fixture(params=["hf", "local"])
def subject(request, tmp_path):
    if request.param == "hf":
        with ViewerStandIn() as stand_in:
            yield Subject(HfViewer(stand_in.url, token=TOKEN), DATASET)
        return
    for split, rows in ROWS.items():
        write_jsonl(tmp_path / "data" / f"{split}.jsonl", rows)
    yield Subject(TwinViewer(index_root=tmp_path / "index"), str(tmp_path / "data"))


def expected_page(split: str, indices: list[int], offset: int, length: int) -> dict:
    return {"features": FEATURES, "rows": [{"row_idx": i, "row": ROWS[split][i], "truncated_cells": []}
                                           for i in indices[offset:offset + length]],
            "num_rows_total": len(indices), "num_rows_per_page": 100, "partial": False}


def test_splits_and_is_valid(subject):
    splits = subject.backend.splits(subject.dataset).model_dump(mode="json")
    assert splits == {"splits": [{"dataset": subject.dataset, "config": "default", "split": s} for s in ROWS],
                      "pending": [], "failed": []}
    assert subject.backend.is_valid(subject.dataset).model_dump(mode="json") == IS_VALID


@pytest.mark.parametrize("split,offset,length", [("train", 0, 100), ("train", 2, 3), ("train", 11, 5),
                                                 ("train", 40, 5), ("test", 0, 2), ("train", 0, 0)])
def test_rows(subject, split, offset, length):
    page = subject.backend.rows(subject.dataset, "default", split, offset, length)
    assert page.model_dump(mode="json") == expected_page(split, list(range(len(ROWS[split]))), offset, length)


def test_first_rows(subject):
    first = subject.backend.first_rows(subject.dataset, "default", "train").model_dump(mode="json")
    assert first == {"dataset": subject.dataset, "config": "default", "split": "train", "features": FEATURES,
                     "rows": expected_page("train", list(range(12)), 0, 100)["rows"], "truncated": False}


@pytest.mark.parametrize("key", list(SEARCH))
def test_search(subject, key):
    split, query = key
    page = subject.backend.search(subject.dataset, "default", split, query)
    assert page.model_dump(mode="json") == expected_page(split, SEARCH[key], 0, 100)
    second = subject.backend.search(subject.dataset, "default", split, query, offset=1, length=2)
    assert second.model_dump(mode="json") == expected_page(split, SEARCH[key], 1, 2)


@pytest.mark.parametrize("key", list(FILTER))
def test_filter(subject, key):
    split, where, orderby = key
    page = subject.backend.filter(subject.dataset, "default", split, where=where, orderby=orderby)
    assert page.model_dump(mode="json") == expected_page(split, FILTER[key], 0, 100)
    second = subject.backend.filter(subject.dataset, "default", split, where=where, orderby=orderby, offset=2,
                                    length=3)
    assert second.model_dump(mode="json") == expected_page(split, FILTER[key], 2, 3)


def test_statistics(subject):
    assert subject.backend.statistics(subject.dataset, "default", "train").model_dump(mode="json") == \
        STATISTICS["train"]


def test_size_shape(subject):
    size = subject.backend.size(subject.dataset).model_dump(mode="json")
    assert set(size) == {"size", "pending", "failed", "partial"} and set(size["size"]) == {"dataset", "configs",
                                                                                          "splits"}
    assert size["size"]["dataset"]["num_rows"] == 15 and size["size"]["configs"][0]["num_columns"] == 6
    assert [(s["split"], s["num_rows"]) for s in size["size"]["splits"]] == [("train", 12), ("test", 3)]
    for key in ("num_bytes_parquet_files", "num_bytes_memory"):
        assert size["size"]["dataset"][key] > 0


def test_trace_view_agrees(subject):
    view = trace_view(subject.backend, subject.dataset, "default", "train").model_dump()
    assert view["rows_scanned"] == 12 and view["num_rows_total"] == 12 and view["tool_calls"] == {}
    assert view["role_sequences"] == {"user>assistant": 4, "system>user>assistant": 4, "system>user>assistant>user": 4}
    assert view["messages_per_row"] == {"min": 2, "mean": 3.0, "max": 4}


@pytest.mark.parametrize("call,code", [
    (lambda b, d: b.rows(d, "default", "train", 0, 101), INVALID_PARAMETER),
    (lambda b, d: b.rows(d, "default", "train", -1, 10), INVALID_PARAMETER),
    (lambda b, d: b.rows(d, "default", "nope"), NOT_FOUND),
    (lambda b, d: b.rows(d, "other", "train"), NOT_FOUND),
    (lambda b, d: b.search(d, "default", "train", ""), MISSING_PARAMETER),
    (lambda b, d: b.filter(d, "default", "train", where='"score" > 1; DROP TABLE data'), INVALID_PARAMETER),
    (lambda b, d: b.filter(d, "default", "train", where='"score" > 1 -- comment'), INVALID_PARAMETER),
    (lambda b, d: b.filter(d, "default", "train", where='"score" > 1 /* c */'), INVALID_PARAMETER),
    (lambda b, d: b.filter(d, "default", "train", orderby='"score"; DROP TABLE data'), INVALID_PARAMETER),
])
def test_same_errors(subject, call, code):
    with pytest.raises(ViewerError) as err:
        call(subject.backend, subject.dataset)
    assert err.value.code == code and err.value.problem and err.value.fix
