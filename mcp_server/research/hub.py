"""Hub search through ``huggingface_hub.HfApi``: ``list_models``, ``list_datasets`` (filters, sort, limit),
``list_papers`` (``GET /api/papers/search``) and ``paper_info`` (``GET /api/papers/{id}``).

Results are short and structured (ids, counts, tags, a trimmed summary) so a researcher can compare
candidates without reading pages; every hit carries its Hub URL.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

from ..errors import ResearchError, TunepackError

Sort = Literal["downloads", "likes", "trending_score", "created_at", "last_modified"]
MAX_LIMIT = 50
MODEL_FIELDS = ["author", "downloads", "likes", "pipeline_tag", "library_name", "tags", "createdAt",
                "lastModified", "trendingScore"]
DATASET_FIELDS = ["author", "downloads", "likes", "tags", "createdAt", "lastModified", "trendingScore", "description"]
_ARXIV = re.compile(r"\d{4}\.\d{4,5}(v\d+)?")


class ModelHit(BaseModel):
    id: str
    url: str
    author: str | None = None
    downloads: int | None = None
    likes: int | None = None
    pipeline_tag: str | None = None
    library: str | None = None
    tags: list[str] = Field(default_factory=list, description="Up to 12 tags (license, base_model, datasets, …).")
    created_at: str | None = None
    last_modified: str | None = None


class DatasetHit(BaseModel):
    id: str
    url: str
    author: str | None = None
    downloads: int | None = None
    likes: int | None = None
    tags: list[str] = Field(default_factory=list, description="Up to 12 tags (task, size, format, license, …).")
    description: str | None = Field(None, description="First 300 characters of the card description.")
    created_at: str | None = None
    last_modified: str | None = None


class PaperHit(BaseModel):
    id: str = Field(description="arXiv id.")
    url: str
    title: str | None = None
    published_at: str | None = None
    upvotes: int | None = None
    summary: str | None = Field(None, description="First 500 characters of the abstract.")
    keywords: list[str] = Field(default_factory=list)
    github_repo: str | None = None


class PaperDetail(PaperHit):
    authors: list[str] = Field(default_factory=list, description="Up to 12 author names.")
    ai_summary: str | None = None
    github_stars: int | None = None
    project_page: str | None = None
    linked_models: list[str] = Field(default_factory=list, description="Up to 15 model ids citing the paper.")
    linked_datasets: list[str] = Field(default_factory=list, description="Up to 15 dataset ids citing the paper.")
    num_models: int | None = None
    num_datasets: int | None = None


class ModelSearch(BaseModel):
    endpoint: str
    query: dict
    models: list[ModelHit]
    note: str


class DatasetSearch(BaseModel):
    endpoint: str
    query: dict
    datasets: list[DatasetHit]
    note: str


class PaperSearch(BaseModel):
    endpoint: str
    query: str
    papers: list[PaperHit]
    note: str


def _endpoint() -> str:
    from ..hf_auth import endpoint

    return endpoint().rstrip("/")


def _api():
    from huggingface_hub import HfApi

    return HfApi(endpoint=_endpoint())  # the token: HF_TOKEN or the saved login, when there is one


def _iso(value: object) -> str | None:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d")
    return str(value)[:10] if value else None


def _cut(text: str | None, n: int) -> str | None:
    if not text:
        return None
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise ResearchError(f"limit={limit} is out of range.", f"ask for 1 to {MAX_LIMIT} results.")
    return limit


def _failed(exc: Exception, action: str) -> TunepackError:
    """Turn a huggingface_hub / network error into one line that says what to do."""
    if isinstance(exc, TunepackError):
        return exc
    # huggingface_hub's HTTP client (httpx or its httpx2 fork) raises TransportError subclasses: match by name
    network = isinstance(exc, OSError) or any(c.__name__ in ("TransportError", "TimeoutException")
                                              for c in type(exc).__mro__)
    if network and getattr(exc, "response", None) is None:  # HfHubHTTPError is an OSError with a response
        return ResearchError(f"{action} failed: the Hub at {_endpoint()} could not be reached ({type(exc).__name__}).",
                             "check the network or HF_ENDPOINT; meanwhile work from local data "
                             "(data_inspect, viewer_* with source='local') and the skills.")
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status == 404:
        return ResearchError(f"{action} failed: not found on the Hub (404).",
                             "check the id (papers use arXiv ids such as 2305.14314); search first.")
    if status == 429:
        return ResearchError(f"{action} failed: the Hub is rate-limiting this client (429).",
                             "wait a minute, then search with a smaller limit; log in (`hf auth login`) for a "
                             "higher quota.")
    from ..hf_auth import http_error

    return http_error(exc, action=action)


def search_models(query: str | None = None, *, filters: list[str] | None = None, author: str | None = None,
                  pipeline_tag: str | None = None, sort: Sort = "downloads", limit: int = 10) -> ModelSearch:
    """Models matching a search string and filters (tags such as 'text-generation', 'peft', 'license:mit',
    'base_model:Qwen/Qwen3-0.6B'), best first by ``sort``."""
    asked = {k: v for k, v in {"query": query, "filters": filters, "author": author, "pipeline_tag": pipeline_tag,
                               "sort": sort, "limit": limit}.items() if v}
    try:
        items = list(_api().list_models(search=query or None, filter=filters or None, author=author or None,
                                        pipeline_tag=pipeline_tag or None, sort=sort, limit=_limit(limit),
                                        expand=MODEL_FIELDS))
    except Exception as exc:
        raise _failed(exc, "Searching models") from None
    base = _endpoint()
    hits = [ModelHit(id=m.id, url=f"{base}/{m.id}", author=m.author, downloads=m.downloads, likes=m.likes,
                     pipeline_tag=m.pipeline_tag, library=m.library_name, tags=list(m.tags or [])[:12],
                     created_at=_iso(m.created_at), last_modified=_iso(m.last_modified)) for m in items]
    note = (f"{len(hits)} models by {sort}; model_info-level detail is on each url" if hits else
            "no model matched: loosen the search string or drop a filter")
    return ModelSearch(endpoint=base, query=asked, models=hits, note=note)


def search_datasets(query: str | None = None, *, filters: list[str] | None = None, author: str | None = None,
                    sort: Sort = "downloads", limit: int = 10) -> DatasetSearch:
    """Datasets matching a search string and filters ('task_categories:text-generation', 'size_categories:1K<n<10K',
    'format:parquet', 'language:en', 'license:apache-2.0'), best first by ``sort``."""
    asked = {k: v for k, v in {"query": query, "filters": filters, "author": author, "sort": sort,
                               "limit": limit}.items() if v}
    try:
        items = list(_api().list_datasets(search=query or None, filter=filters or None, author=author or None,
                                          sort=sort, limit=_limit(limit), expand=DATASET_FIELDS))
    except Exception as exc:
        raise _failed(exc, "Searching datasets") from None
    base = _endpoint()
    hits = [DatasetHit(id=d.id, url=f"{base}/datasets/{d.id}", author=d.author, downloads=d.downloads, likes=d.likes,
                       tags=list(d.tags or [])[:12], description=_cut(getattr(d, "description", None), 300),
                       created_at=_iso(d.created_at), last_modified=_iso(d.last_modified)) for d in items]
    note = (f"{len(hits)} datasets by {sort}; check one's shape with viewer_traces / viewer_rows before training"
            if hits else "no dataset matched: loosen the search string or drop a filter")
    return DatasetSearch(endpoint=base, query=asked, datasets=hits, note=note)


_Hit = TypeVar("_Hit", bound=PaperHit)


def _paper_hit(p, base: str, cls: type[_Hit], **extra) -> _Hit:
    return cls(id=p.id, url=f"{base}/papers/{p.id}", title=_cut(p.title, 300), published_at=_iso(p.published_at),
               upvotes=p.upvotes, summary=_cut(p.summary, 500), keywords=list(p.ai_keywords or [])[:10],
               github_repo=p.github_repo, **extra)


def search_papers(query: str, limit: int = 10) -> PaperSearch:
    """Papers on the Hub matching a search string (title, abstract), as the Hub ranks them."""
    if not (query or "").strip():
        raise ResearchError("A paper search needs a query.", "pass words from the topic, e.g. 'QLoRA'.")
    try:
        items = list(_api().list_papers(query=query, limit=_limit(limit)))[:limit]
    except Exception as exc:
        raise _failed(exc, "Searching papers") from None
    base = _endpoint()
    hits = [_paper_hit(p, base, PaperHit) for p in items]
    note = (f"{len(hits)} papers; research_paper(id) gives authors, links and the models/datasets citing one"
            if hits else "no paper matched: try fewer or other words")
    return PaperSearch(endpoint=base, query=query, papers=hits, note=note)


def paper(arxiv_id: str) -> PaperDetail:
    """One paper's page: abstract, authors, code, and the models and datasets that cite it."""
    arxiv_id = (arxiv_id or "").strip().removeprefix("arxiv:").removeprefix("https://arxiv.org/abs/")
    if not _ARXIV.fullmatch(arxiv_id):
        raise ResearchError(f"'{arxiv_id}' is not an arXiv id.", "pass an id like 2305.14314 (research_papers "
                                                                 "finds them).")
    try:
        p = _api().paper_info(arxiv_id)
    except Exception as exc:
        raise _failed(exc, f"Reading paper {arxiv_id}") from None
    base = _endpoint()
    return _paper_hit(
        p, base, PaperDetail, authors=[a.name for a in (p.authors or [])][:12], ai_summary=_cut(p.ai_summary, 500),
        github_stars=p.github_stars, project_page=p.project_page,
        linked_models=[m.id for m in (p.linked_models or [])][:15],
        linked_datasets=[d.id for d in (p.linked_datasets or [])][:15],
        num_models=p.num_total_models, num_datasets=p.num_total_datasets)
