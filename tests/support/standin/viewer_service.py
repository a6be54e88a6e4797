"""A loopback stand-in for the Datasets Viewer (datasets-server), for tests.

It serves /is-valid, /splits, /first-rows, /rows, /search, /filter, /statistics and /size for one small
fixture dataset, answering from the HAND-WRITTEN fixtures below in the shapes documented in
../shared/reference/hf-apis.md ("Dataset Viewer"). It never imports tunepack: search and filter
results are fixed tables (query → matching row indices, (where, orderby) → ordered row indices),
statistics and size are literal answers. It checks parameters the way the service does (422
MissingRequiredParameter / InvalidParameter, 404 ResponseNotFound, 401 for a private dataset without
the token), records every request (path, query, headers), and can be told to answer any error.

The contract tests write ``ROWS`` to local files so the twin sees the same data.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

DATASET = "tunepack/viewer-fixture"
PRIVATE = "tunepack/private-fixture"  # same data, answers only with the token
CONFIG = "default"
TOKEN = "hf_viewer_standin_secret_7f3a9c"

SHORT = [{"role": "user", "content": "Summarize this item."}, {"role": "assistant", "content": "Done."}]
MID = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Summarize this item."},
       {"role": "assistant", "content": "Done."}]
LONG = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Summarize this item."},
        {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks."}]

TRAIN = [
    {"text": "The quick brown fox jumps over the lazy dog", "label": "animal", "score": 3, "ratio": 0.25, "flag": True, "messages": SHORT},  # noqa: E501
    {"text": "Deploy the web server with docker compose", "label": "tech", "score": 7, "ratio": 0.5, "flag": False, "messages": MID},  # noqa: E501
    {"text": "Bread needs flour, water, salt and time", "label": "food", "score": 1, "ratio": 0.75, "flag": True, "messages": LONG},  # noqa: E501
    {"text": "The server logs show a timeout error", "label": "tech", "score": 9, "ratio": 1.0, "flag": False, "messages": SHORT},  # noqa: E501
    {"text": "Restart the server after the upgrade", "label": "tech", "score": 4, "ratio": 1.25, "flag": True, "messages": MID},  # noqa: E501
    {"text": "A fox and a hound became friends", "label": "animal", "score": 5, "ratio": 1.5, "flag": False, "messages": LONG},  # noqa: E501
    {"text": "Slow cooked beans with garlic", "label": "food", "score": None, "ratio": 1.75, "flag": True, "messages": SHORT},  # noqa: E501
    {"text": "Monitor server memory with a dashboard", "label": "tech", "score": 8, "ratio": 2.0, "flag": False, "messages": MID},  # noqa: E501
    {"text": "Cats sleep most of the afternoon", "label": "animal", "score": 2, "ratio": 2.25, "flag": True, "messages": LONG},  # noqa: E501
    {"text": "Our servers run on two continents", "label": "tech", "score": 6, "ratio": 2.5, "flag": None, "messages": SHORT},  # noqa: E501
    {"text": "Scale the server pool before launch", "label": "tech", "score": 10, "ratio": 2.75, "flag": True, "messages": MID},  # noqa: E501
    {"text": "Fresh basil makes the sauce", "label": "food", "score": 0, "ratio": 3.0, "flag": False, "messages": LONG},  # noqa: E501
]
TEST = [
    {"text": "Where did the fox go", "label": "animal", "score": 4, "ratio": 0.1, "flag": True, "messages": SHORT},
    {"text": "Patch the server kernel", "label": "tech", "score": 2, "ratio": 0.2, "flag": False, "messages": MID},
    {"text": "Soup of the day", "label": "food", "score": 6, "ratio": 0.3, "flag": True, "messages": LONG},
]
ROWS = {"train": TRAIN, "test": TEST}

STRING = {"dtype": "string", "_type": "Value"}
FEATURES = [
    {"feature_idx": 0, "name": "text", "type": STRING},
    {"feature_idx": 1, "name": "label", "type": STRING},
    {"feature_idx": 2, "name": "score", "type": {"dtype": "int64", "_type": "Value"}},
    {"feature_idx": 3, "name": "ratio", "type": {"dtype": "float64", "_type": "Value"}},
    {"feature_idx": 4, "name": "flag", "type": {"dtype": "bool", "_type": "Value"}},
    {"feature_idx": 5, "name": "messages", "type": {"feature": {"role": STRING, "content": STRING}, "_type": "List"}},
]

# (split, query) → matching row indices, in dataset order (the service orders matches by row index).
SEARCH = {
    ("train", "fox"): [0, 5],
    ("train", "server"): [1, 3, 4, 7, 9, 10],  # "servers" (row 9) stems to "server"
    ("train", "servers"): [1, 3, 4, 7, 9, 10],
    ("train", "fox docker"): [0, 1, 5],
    ("train", "zebra"): [],
    ("test", "fox"): [0],
}
# (split, where, orderby) → matching row indices in answer order.
FILTER = {
    ("train", '"score" > 5', None): [1, 3, 7, 9, 10],
    ("train", "\"label\" = 'tech' AND \"flag\" = TRUE", None): [4, 10],
    ("train", '"score" IS NULL', None): [6],
    ("train", '"score" >= 3', '"score" DESC'): [10, 3, 7, 1, 9, 5, 4, 0],
    ("train", "\"ratio\" < 1 OR \"label\" = 'food'", None): [0, 1, 2, 6, 11],
    ("train", None, '"label" ASC, "score" DESC'): [5, 0, 8, 2, 11, 6, 10, 3, 7, 1, 9, 4],
}

STATISTICS = {"train": {"num_examples": 12, "partial": False, "statistics": [
    {"column_name": "flag", "column_type": "bool", "column_statistics": {
        "nan_count": 1, "nan_proportion": 0.08333, "frequencies": {"False": 5, "True": 6}}},
    {"column_name": "label", "column_type": "string_label", "column_statistics": {
        "nan_count": 0, "nan_proportion": 0.0, "no_label_count": 0, "no_label_proportion": 0.0, "n_unique": 3,
        "frequencies": {"tech": 6, "animal": 3, "food": 3}}},
    {"column_name": "messages", "column_type": "list", "column_statistics": {
        "nan_count": 0, "nan_proportion": 0.0, "min": 2, "max": 4, "mean": 3.0, "median": 3.0, "std": 0.8528,
        "histogram": {"hist": [4, 8], "bin_edges": [2, 3, 4]}}},
    {"column_name": "ratio", "column_type": "float", "column_statistics": {
        "nan_count": 0, "nan_proportion": 0.0, "min": 0.25, "max": 3.0, "mean": 1.625, "median": 1.625,
        "std": 0.90139, "histogram": {"hist": [2, 1, 1, 1, 1, 1, 1, 1, 1, 2],
                                      "bin_edges": [0.25, 0.525, 0.8, 1.075, 1.35, 1.625, 1.9, 2.175, 2.45, 2.725,
                                                    3.0]}}},
    {"column_name": "score", "column_type": "int", "column_statistics": {
        "nan_count": 1, "nan_proportion": 0.08333, "min": 0, "max": 10, "mean": 5.0, "median": 5.0, "std": 3.31662,
        "histogram": {"hist": [2, 2, 2, 2, 3], "bin_edges": [0, 2, 4, 6, 8, 10]}}},
    {"column_name": "text", "column_type": "string_text", "column_statistics": {
        "nan_count": 0, "nan_proportion": 0.0, "min": 27, "max": 43, "mean": 35.08333, "median": 35.5,
        "std": 4.75697, "histogram": {"hist": [1, 1, 2, 1, 3, 1, 1, 2],
                                      "bin_edges": [27, 29, 31, 33, 35, 37, 39, 41, 43]}}},
]}}

SIZE = {"size": {
    "dataset": {"dataset": DATASET, "num_bytes_original_files": 3113, "num_bytes_parquet_files": 6402,
                "num_bytes_memory": 2874, "num_rows": 15, "estimated_num_rows": None},
    "configs": [{"dataset": DATASET, "config": CONFIG, "num_bytes_original_files": 3113,
                 "num_bytes_parquet_files": 6402, "num_bytes_memory": 2874, "num_rows": 15, "num_columns": 6,
                 "estimated_num_rows": None}],
    "splits": [{"dataset": DATASET, "config": CONFIG, "split": "train", "num_bytes_parquet_files": 4467,
                "num_bytes_memory": 2300, "num_rows": 12, "num_columns": 6, "estimated_num_rows": None},
               {"dataset": DATASET, "config": CONFIG, "split": "test", "num_bytes_parquet_files": 1935,
                "num_bytes_memory": 574, "num_rows": 3, "num_columns": 6, "estimated_num_rows": None}]},
    "pending": [], "failed": [], "partial": False}

IS_VALID = {"viewer": True, "preview": True, "search": True, "filter": True, "statistics": True}
INVALID_SYMBOLS = re.compile(r";|--|/\*|\*/")
MAX_ROWS = 100
_PAGE = {"dataset", "config", "split", "offset", "length"}
# The documented parameters of each endpoint (hf-apis.md): anything else is a malformed request.
PARAMETERS = {"/is-valid": {"dataset"}, "/splits": {"dataset", "config"},
              "/first-rows": {"dataset", "config", "split"}, "/rows": _PAGE, "/search": _PAGE | {"query"},
              "/filter": _PAGE | {"where", "orderby"}, "/statistics": {"dataset", "config", "split"},
              "/size": {"dataset", "config"}}


@dataclass
class Request:
    method: str
    path: str
    query: dict  # one value per parameter
    headers: dict  # lower-cased names


@dataclass
class State:
    token: str = TOKEN
    requests: list = field(default_factory=list)
    fail: dict = field(default_factory=dict)  # path → (status, X-Error-Code, message)
    violations: list = field(default_factory=list)  # request shapes the service would not expect


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _page(split: str, indices: list[int], offset: int, length: int) -> dict:
    chosen = indices[offset:offset + length]
    return {"features": FEATURES, "rows": [{"row_idx": i, "row": ROWS[split][i], "truncated_cells": []}
                                           for i in chosen],
            "num_rows_total": len(indices), "num_rows_per_page": MAX_ROWS, "partial": False}


class Handler(BaseHTTPRequestHandler):
    state: State

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status: int, payload: object, code: str | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        req = Request("GET", url.path, query, {k.lower(): v for k, v in self.headers.items()})
        self.state.requests.append(req)
        self._check_shape(req)
        try:
            if url.path in self.state.fail:
                status, code, message = self.state.fail[url.path]
                raise ApiError(status, code, message.replace("{authorization}", req.headers.get("authorization", "")))
            self._send(200, self._answer(req))
        except ApiError as exc:
            self._send(exc.status, {"error": exc.message}, exc.code)

    def _check_shape(self, req: Request) -> None:
        allowed = PARAMETERS.get(req.path)
        if allowed is None:
            self.state.violations.append(f"unknown endpoint GET {req.path}")
        elif set(req.query) - allowed:
            self.state.violations.append(f"GET {req.path} with undocumented parameters {sorted(set(req.query) - allowed)}")
        if int(self.headers.get("Content-Length") or 0):
            self.state.violations.append(f"GET {req.path} carries a body")

    def _refuse(self, method: str) -> None:
        self.state.violations.append(f"{method} {self.path}: the Datasets Viewer only answers GET")
        self._send(405, {"error": "Method not allowed"})

    def do_POST(self):  # noqa: N802
        self._refuse("POST")

    def do_PUT(self):  # noqa: N802
        self._refuse("PUT")

    def do_DELETE(self):  # noqa: N802
        self._refuse("DELETE")

    # --- the service's parameter checks -----------------------------------------------------

    def _required(self, req: Request, *names: str) -> list[str]:
        missing = [n for n in names if not req.query.get(n)]
        if missing:
            raise ApiError(422, "MissingRequiredParameter", f"Parameter '{missing[0]}' is required")
        return [req.query[n] for n in names]

    def _dataset(self, req: Request) -> str:
        dataset = self._required(req, "dataset")[0]
        if dataset not in (DATASET, PRIVATE):
            raise ApiError(404, "ResponseNotFound", "Not found.")
        if dataset == PRIVATE and req.headers.get("authorization") != f"Bearer {self.state.token}":
            raise ApiError(401, "ExternalUnauthenticatedError",
                           "The dataset does not exist, or is not accessible without authentication (private or "
                           "gated). Please check the spelling of the dataset name or retry with authentication.")
        return dataset

    def _split(self, req: Request) -> str:
        config, split = self._required(req, "config", "split")
        if config != CONFIG or split not in ROWS:
            raise ApiError(404, "ResponseNotFound", "Not found.")
        return split

    def _offset_length(self, req: Request) -> tuple[int, int]:
        try:
            offset = int(req.query.get("offset", 0))
            length = int(req.query.get("length", MAX_ROWS))
        except ValueError:
            raise ApiError(422, "InvalidParameter", "Parameter 'offset' and 'length' must be integers") from None
        if offset < 0:
            raise ApiError(422, "InvalidParameter", "Parameter 'offset' must be positive")
        if length < 0:
            raise ApiError(422, "InvalidParameter", "Parameter 'length' must be positive")
        if length > MAX_ROWS:
            raise ApiError(422, "InvalidParameter", f"Parameter 'length' must not be greater than {MAX_ROWS}")
        return offset, length

    # --- endpoints -------------------------------------------------------------------------

    def _answer(self, req: Request) -> dict:
        path = req.path
        dataset = self._dataset(req)
        if path == "/is-valid":
            return IS_VALID
        if path == "/splits":
            if req.query.get("config") not in (None, CONFIG):
                raise ApiError(404, "ResponseNotFound", "Not found.")
            return {"splits": [{"dataset": dataset, "config": CONFIG, "split": s} for s in ROWS],
                    "pending": [], "failed": []}
        if path == "/size":
            return SIZE
        split = self._split(req)
        if path == "/first-rows":
            page = _page(split, list(range(len(ROWS[split]))), 0, MAX_ROWS)
            return {"dataset": dataset, "config": CONFIG, "split": split, "features": FEATURES,
                    "rows": page["rows"], "truncated": False}
        if path == "/statistics":
            if split not in STATISTICS:
                raise ApiError(404, "ResponseNotFound", "Not found.")
            return STATISTICS[split]
        offset, length = self._offset_length(req)
        if path == "/rows":
            return _page(split, list(range(len(ROWS[split]))), offset, length)
        if path == "/search":
            query = self._required(req, "query")[0]
            if (split, query) not in SEARCH:
                raise ApiError(500, "UnexpectedApiError", f"the stand-in has no fixture for query {query!r}")
            return _page(split, SEARCH[(split, query)], offset, length)
        if path == "/filter":
            where, orderby = req.query.get("where") or None, req.query.get("orderby") or None
            for name, value in (("where", where), ("orderby", orderby)):
                if value and INVALID_SYMBOLS.search(value):
                    raise ApiError(422, "InvalidParameter", f"Parameter '{name}' contains invalid symbols")
            if (split, where, orderby) not in FILTER:
                raise ApiError(422, "InvalidParameter", "Parameter 'where' is invalid")
            return _page(split, FILTER[(split, where, orderby)], offset, length)
        raise ApiError(404, "ResponseNotFound", "Not found.")


class ViewerStandIn:
    """Run with ``with ViewerStandIn() as viewer: ...``; ``viewer.url`` is the base URL."""

    def __init__(self):
        self.state = State()
        handler = type("BoundViewerHandler", (Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> "ViewerStandIn":
        self.thread.start()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        if exc_type is None:  # every request of a passing test must have had a documented shape
            assert not self.state.violations, "malformed Datasets Viewer requests: " + "; ".join(self.state.violations)

    def fail(self, path: str, status: int, code: str, message: str = "stand-in error") -> None:
        """Answer every request to ``path`` with this error ({authorization} in the message echoes the header)."""
        self.state.fail[path] = (status, code, message)

    def heal(self) -> None:
        self.state.fail.clear()

    def requests(self, path: str | None = None) -> list[Request]:
        return [r for r in self.state.requests if path is None or r.path == path]
