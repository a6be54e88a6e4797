"""The Hub's Datasets Viewer (datasets-server) over HTTP.

The base URL is a setting (argument, else ``TUNEPACK_VIEWER_URL``, else the public service): the
service does not move with ``HF_ENDPOINT``. The token (argument, else ``huggingface_hub.get_token()``)
is sent as ``Authorization: Bearer`` and never appears in an error or a log line. Every non-200 answer
becomes a ``ViewerError`` that names the cause from the status and the ``X-Error-Code`` header and says
what to do next.
"""

from __future__ import annotations

from typing import Any

import httpx

from .. import settings
from .backend import (
    INVALID_PARAMETER,
    MISSING_PARAMETER,
    NOT_FOUND,
    NOT_READY,
    SEARCH_UNAVAILABLE,
    UNAUTHORIZED,
    UNEXPECTED,
    UNREACHABLE,
    WHERE_HELP,
    ViewerBackend,
    ViewerError,
)
from .responses import (
    MAX_ROWS_PER_PAGE,
    FirstRowsResponse,
    IsValidResponse,
    RowsResponse,
    SizeResponse,
    SplitsResponse,
    StatisticsResponse,
)
from .where import check_bounds

DEFAULT_URL = "https://datasets-server.huggingface.co"
TIMEOUT_S = 20.0


def viewer_url(base_url: str | None = None) -> str:
    return (base_url or settings.viewer_url() or DEFAULT_URL).rstrip("/")


class HfViewer(ViewerBackend):
    source = "hf"

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout_s: float = TIMEOUT_S):
        if token is None:
            from huggingface_hub import get_token

            token = get_token()
        self.base_url = viewer_url(base_url)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._token = token or ""
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)

    def close(self) -> None:
        self._client.close()

    # --- endpoints ----------------------------------------------------------------------------

    def is_valid(self, dataset: str) -> IsValidResponse:
        return IsValidResponse.model_validate(self._get("/is-valid", dataset=dataset))

    def splits(self, dataset: str, config: str | None = None) -> SplitsResponse:
        return SplitsResponse.model_validate(self._get("/splits", dataset=dataset, config=config))

    def first_rows(self, dataset: str, config: str, split: str) -> FirstRowsResponse:
        return FirstRowsResponse.model_validate(self._get("/first-rows", dataset=dataset, config=config, split=split))

    def rows(self, dataset: str, config: str, split: str, offset: int = 0,
             length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        return RowsResponse.model_validate(self._get("/rows", dataset=dataset, config=config, split=split,
                                                     offset=offset, length=length))

    def search(self, dataset: str, config: str, split: str, query: str, offset: int = 0,
               length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        return RowsResponse.model_validate(self._get("/search", dataset=dataset, config=config, split=split,
                                                     query=query, offset=offset, length=length))

    def filter(self, dataset: str, config: str, split: str, where: str | None = None, orderby: str | None = None,
               offset: int = 0, length: int = MAX_ROWS_PER_PAGE) -> RowsResponse:
        for param, text in (("where", where), ("orderby", orderby)):
            if text:
                check_bounds(text, param)  # the twin's bounds, so both backends answer alike
        return RowsResponse.model_validate(self._get("/filter", dataset=dataset, config=config, split=split,
                                                     where=where or None, orderby=orderby or None,
                                                     offset=offset, length=length))

    def statistics(self, dataset: str, config: str, split: str) -> StatisticsResponse:
        return StatisticsResponse.model_validate(self._get("/statistics", dataset=dataset, config=config,
                                                           split=split))

    def size(self, dataset: str) -> SizeResponse:
        return SizeResponse.model_validate(self._get("/size", dataset=dataset))

    # --- HTTP ---------------------------------------------------------------------------------

    def _get(self, path: str, **params: Any) -> dict:
        query = {k: v for k, v in params.items() if v is not None}
        try:
            response = self._client.get(path, params=query)
        except httpx.InvalidURL as exc:  # no request left: an argument cannot go into a URL (too long, control chars)
            raise ViewerError(f"The request for {path} cannot be sent: {exc}.",
                              "pass a Hub dataset id ('owner/name'), config and split names from viewer_splits, "
                              "and a where/orderby/query of at most a few hundred characters.",
                              INVALID_PARAMETER) from None
        except httpx.HTTPError as exc:
            raise ViewerError(f"The Datasets Viewer at {self.base_url} could not be reached for {path} "
                              f"({type(exc).__name__}).",
                              "check the network, or TUNEPACK_VIEWER_URL if it is set; retry in a minute, or "
                              "download the dataset and use source='local'.", UNREACHABLE) from None
        if response.status_code == 200:
            try:
                return response.json()
            except ValueError:
                raise ViewerError(f"The Datasets Viewer answered {path} with something that is not JSON.",
                                  "retry in a minute; check TUNEPACK_VIEWER_URL points at the Datasets Viewer.",
                                  UNEXPECTED, 200) from None
        raise self._error(response, path, query)

    def _error(self, response: httpx.Response, path: str, query: dict) -> ViewerError:
        status = response.status_code
        code = response.headers.get("X-Error-Code", "")
        try:
            message = str(response.json().get("error", ""))
        except (ValueError, AttributeError):
            message = response.text
        if self._token:
            message = message.replace(self._token, "***")
        message = " ".join(message.split())[:300]
        dataset = query.get("dataset", "?")
        where = f"{path} for '{dataset}'" + (f" (config '{query['config']}', split '{query['split']}')"
                                              if "split" in query else "")
        said = f" The service said: {message}" if message else ""
        if status in (401, 403):
            return ViewerError(f"The Datasets Viewer refused {where} (HTTP {status} {code}).{said}",
                               "the dataset is private or gated: use a token with read access (`hf auth login` or "
                               "HF_TOKEN), accept the dataset's conditions on the Hub, then retry.",
                               UNAUTHORIZED, status)
        if status == 404:
            return ViewerError(f"The Datasets Viewer has no response for {where} (404 {code or NOT_FOUND}).{said}",
                               "check the dataset id (owner/name) and call viewer_splits for the valid config and "
                               "split names; a private dataset needs a token with read access.", NOT_FOUND, status)
        if code == MISSING_PARAMETER:
            return ViewerError(f"{path} is missing a required parameter.{said}",
                               "pass dataset, config and split (and query for search).", MISSING_PARAMETER, status)
        if status == 422 or code == INVALID_PARAMETER:
            fix = WHERE_HELP if path == "/filter" else (
                "use a non-empty query of plain words" if path == "/search" else
                f"use offset ≥ 0 and 0 ≤ length ≤ {MAX_ROWS_PER_PAGE}; config and split from viewer_splits.")
            return ViewerError(f"The Datasets Viewer rejected a parameter of {where} (422 {code}).{said}", fix,
                               INVALID_PARAMETER, status)
        if code == SEARCH_UNAVAILABLE or (status == 400 and path == "/search"):
            return ViewerError(f"Full-text search is not available for '{dataset}'.{said}",
                               "use viewer_filter with a where clause, or download the data and search it with "
                               "source='local'.", SEARCH_UNAVAILABLE, status)
        if code == NOT_READY:
            return ViewerError(f"The Datasets Viewer has not finished processing {where} yet (ResponseNotReady).",
                               "retry in a minute or two; big or new datasets take longer.", NOT_READY, status)
        return ViewerError(f"The Datasets Viewer failed on {where} (HTTP {status} {code}).{said}",
                           "retry in a minute; if it persists the service cannot process this dataset — download "
                           "it and use source='local'.", code or UNEXPECTED, status)
