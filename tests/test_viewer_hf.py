"""The HF Datasets Viewer backend over real HTTP against the loopback stand-in: request shapes, the
token, every error mapping, and the MCP tools with source='hf'."""

import json
import logging
import os
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.common import REPO
from mcp_server.viewer.backend import (
    INVALID_PARAMETER,
    MISSING_PARAMETER,
    NOT_FOUND,
    NOT_READY,
    SEARCH_UNAVAILABLE,
    UNAUTHORIZED,
    UNEXPECTED,
    UNREACHABLE,
    ViewerError,
)
from mcp_server.viewer.hf import DEFAULT_URL, HfViewer
from support.standin.viewer_service import DATASET, FEATURES, PRIVATE, STATISTICS, TOKEN, TRAIN, ViewerStandIn


@pytest.fixture
def viewer():
    with ViewerStandIn() as stand_in:
        yield stand_in


@pytest.fixture
def hf(viewer):
    backend = HfViewer(viewer.url, token=TOKEN)
    yield backend
    backend.close()


def test_base_url_and_token_come_from_configuration(viewer, monkeypatch):
    monkeypatch.delenv("TUNEPACK_VIEWER_URL", raising=False)
    assert HfViewer(token="x").base_url == DEFAULT_URL
    monkeypatch.setenv("TUNEPACK_VIEWER_URL", viewer.url + "/")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    backend = HfViewer()  # token from huggingface_hub.get_token(), URL from the environment
    assert backend.base_url == viewer.url
    assert backend.splits(PRIVATE).splits[0].dataset == PRIVATE
    (req,) = viewer.requests("/splits")
    assert req.method == "GET" and req.query == {"dataset": PRIVATE}
    assert req.headers["authorization"] == f"Bearer {TOKEN}"


def test_every_endpoint_sends_the_documented_request(hf, viewer):
    assert hf.is_valid(DATASET).search is True
    assert [s.split for s in hf.splits(DATASET).splits] == ["train", "test"]
    first = hf.first_rows(DATASET, "default", "train")
    assert first.model_dump(mode="json")["features"] == FEATURES and len(first.rows) == 12
    page = hf.rows(DATASET, "default", "train", offset=2, length=3)
    assert [r.row_idx for r in page.rows] == [2, 3, 4] and page.rows[0].row == TRAIN[2] and page.num_rows_total == 12
    found = hf.search(DATASET, "default", "train", "fox", offset=0, length=10)
    assert [r.row_idx for r in found.rows] == [0, 5] and found.num_rows_total == 2
    picked = hf.filter(DATASET, "default", "train", where='"score" >= 3', orderby='"score" DESC', offset=2, length=3)
    assert [r.row_idx for r in picked.rows] == [7, 1, 9] and picked.num_rows_total == 8
    assert hf.statistics(DATASET, "default", "train").model_dump(mode="json") == STATISTICS["train"]
    assert hf.size(DATASET).size.dataset.num_rows == 15

    expected = {
        "/is-valid": {"dataset": DATASET},
        "/splits": {"dataset": DATASET},
        "/first-rows": {"dataset": DATASET, "config": "default", "split": "train"},
        "/rows": {"dataset": DATASET, "config": "default", "split": "train", "offset": "2", "length": "3"},
        "/search": {"dataset": DATASET, "config": "default", "split": "train", "query": "fox", "offset": "0",
                    "length": "10"},
        "/filter": {"dataset": DATASET, "config": "default", "split": "train", "where": '"score" >= 3',
                    "orderby": '"score" DESC', "offset": "2", "length": "3"},
        "/statistics": {"dataset": DATASET, "config": "default", "split": "train"},
        "/size": {"dataset": DATASET},
    }
    assert [r.path for r in viewer.requests()] == list(expected)
    for req in viewer.requests():
        assert req.method == "GET" and req.query == expected[req.path], req.path
        assert req.headers["authorization"] == f"Bearer {TOKEN}"


def test_without_token_no_header_and_private_data_is_refused(viewer):
    anonymous = HfViewer(viewer.url, token="")
    assert anonymous.rows(DATASET, "default", "train", 0, 1).num_rows_total == 12
    assert "authorization" not in viewer.requests()[-1].headers
    with pytest.raises(ViewerError) as err:
        anonymous.rows(PRIVATE, "default", "train")
    assert err.value.code == UNAUTHORIZED and err.value.status == 401 and "HF_TOKEN" in err.value.fix


@pytest.mark.parametrize("path,status,code,expected,hint", [
    ("/rows", 401, "ExternalUnauthenticatedError", UNAUTHORIZED, "token"),
    ("/rows", 403, "ExternalAuthenticatedError", UNAUTHORIZED, "token"),
    ("/rows", 404, "ResponseNotFound", NOT_FOUND, "viewer_splits"),
    ("/rows", 422, "InvalidParameter", INVALID_PARAMETER, "length"),
    ("/filter", 422, "InvalidParameter", INVALID_PARAMETER, "double-quoted"),
    ("/rows", 422, "MissingRequiredParameter", MISSING_PARAMETER, "config and split"),
    ("/rows", 500, "ResponseNotReady", NOT_READY, "retry"),
    ("/search", 400, "SearchFeatureNotAvailableError", SEARCH_UNAVAILABLE, "viewer_filter"),
    ("/rows", 500, "UnexpectedApiError", UNEXPECTED, "retry"),
])
def test_error_mapping_and_the_token_never_leaks(hf, viewer, caplog, path, status, code, expected, hint):
    caplog.set_level(logging.DEBUG)
    viewer.fail(path, status, code, "the request carried {authorization}")  # a service echoing the header
    call = {"/rows": lambda: hf.rows(DATASET, "default", "train"),
            "/filter": lambda: hf.filter(DATASET, "default", "train", where='"score" > 5'),
            "/search": lambda: hf.search(DATASET, "default", "train", "fox")}[path]
    with pytest.raises(ViewerError) as err:
        call()
    error = err.value
    assert error.code == expected and error.status == status and hint in error.fix
    assert viewer.requests()[-1].headers["authorization"] == f"Bearer {TOKEN}"  # sent...
    assert TOKEN not in str(error) and TOKEN not in json.dumps(error.to_dict())  # ...never shown
    assert TOKEN not in caplog.text


def test_real_parameter_errors_from_the_service(hf):
    cases = [(lambda: hf.rows(DATASET, "default", "train", 0, 101), INVALID_PARAMETER),
             (lambda: hf.rows(DATASET, "default", "nope"), NOT_FOUND),
             (lambda: hf.rows("someone/missing", "default", "train"), NOT_FOUND),
             (lambda: hf.search(DATASET, "default", "train", ""), MISSING_PARAMETER),
             (lambda: hf.filter(DATASET, "default", "train", where='"score" > 1; DROP TABLE data'),
              INVALID_PARAMETER)]
    for call, code in cases:
        with pytest.raises(ViewerError) as err:
            call()
        assert err.value.code == code, err.value


def test_unreachable_service():
    with pytest.raises(ViewerError) as err:
        HfViewer("http://127.0.0.1:9", token=TOKEN, timeout_s=2).splits(DATASET)
    assert err.value.code == UNREACHABLE and "TUNEPACK_VIEWER_URL" in err.value.fix and TOKEN not in str(err.value)


def test_mcp_tools_with_source_hf(viewer, monkeypatch):
    monkeypatch.setenv("TUNEPACK_VIEWER_URL", viewer.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "serve"],
                                   env=os.environ.copy(), cwd=str(REPO))

    async def main():
        async with Client(params) as client:
            rows = await client.call_tool("viewer_rows", {"source": "hf", "dataset": DATASET, "length": 2})
            found = await client.call_tool("viewer_search", {"source": "hf", "dataset": DATASET, "query": "server"})
            traces = await client.call_tool("viewer_traces", {"source": "hf", "dataset": DATASET})
            missing = await client.call_tool("viewer_rows", {"source": "hf", "dataset": "someone/missing"})
            return rows, found, traces, missing

    rows, found, traces, missing = anyio.run(main)
    assert not rows.is_error and [r["row_idx"] for r in rows.structured_content["rows"]] == [0, 1]
    assert [r["row_idx"] for r in found.structured_content["rows"]] == [1, 3, 4, 7, 9, 10]
    assert traces.structured_content["role_sequences"] == {"user>assistant": 4, "system>user>assistant": 4,
                                                           "system>user>assistant>user": 4}
    assert missing.is_error and "viewer_splits" in missing.content[0].text and TOKEN not in missing.content[0].text
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in viewer.requests())


def test_the_stand_in_rejects_request_shapes_the_service_does_not_document():
    import httpx

    with pytest.raises(AssertionError, match="undocumented parameters \\['limit'\\]"):
        with ViewerStandIn() as stand_in:
            httpx.get(f"{stand_in.url}/rows", params={"dataset": DATASET, "config": "default", "split": "train",
                                                     "limit": 5})
    with pytest.raises(AssertionError, match="only answers GET"):
        with ViewerStandIn() as stand_in:
            assert httpx.post(f"{stand_in.url}/rows", json={}).status_code == 405
