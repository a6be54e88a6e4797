"""MCP tools for the researcher role: Hub search for models, datasets and papers (mcp_server.research)."""

from typing import Annotated, Literal

from pydantic import Field

from ..research import (
    DatasetSearch,
    ModelSearch,
    PaperDetail,
    PaperSearch,
    paper,
    search_datasets,
    search_models,
    search_papers,
)
from .common import guarded

Query = Annotated[str | None, Field(description="Words the id/name must contain (empty = no text filter).")]
Filters = Annotated[list[str] | None, Field(description="Hub tags that must all match, e.g. ['peft', "
                                                        "'base_model:Qwen/Qwen3-0.6B'] or ['task_categories:"
                                                        "text-generation', 'size_categories:1K<n<10K'].")]
Author = Annotated[str | None, Field(description="Only this user or organisation.")]
SortArg = Annotated[Literal["downloads", "likes", "trending_score", "created_at", "last_modified"],
                    Field(description="Best first by this key.")]
Limit = Annotated[int, Field(description="How many results (1-50).", ge=1, le=50)]


@guarded
def research_models(query: Query = None, filters: Filters = None, author: Author = None,
                    pipeline_tag: Annotated[str | None, Field(description="Task, e.g. text-generation.")] = None,
                    sort: SortArg = "downloads", limit: Limit = 10) -> ModelSearch:
    """Search models on the Hugging Face Hub (base models to fine-tune, adapters others trained, baselines):
    id, downloads, likes, task, library, tags and URL per hit."""
    return search_models(query, filters=filters, author=author, pipeline_tag=pipeline_tag, sort=sort, limit=limit)


@guarded
def research_datasets(query: Query = None, filters: Filters = None, author: Author = None,
                      sort: SortArg = "downloads", limit: Limit = 10) -> DatasetSearch:
    """Search datasets on the Hugging Face Hub (training or eval data): id, downloads, likes, tags, a short
    description and URL per hit. Check a candidate's shape before proposing it (the Datasets Viewer's first rows)."""
    return search_datasets(query, filters=filters, author=author, sort=sort, limit=limit)


@guarded
def research_papers(query: Annotated[str, Field(description="Topic words, e.g. 'QLoRA' or 'tool calling SFT'.")],
                    limit: Limit = 10) -> PaperSearch:
    """Search papers on the Hugging Face Hub (Daily Papers index): arXiv id, title, date, upvotes, a trimmed
    abstract and keywords per hit."""
    return search_papers(query, limit)


@guarded
def research_paper(arxiv_id: Annotated[str, Field(description="arXiv id, e.g. 2305.14314.")]) -> PaperDetail:
    """One paper: abstract, authors, code link, and the models and datasets on the Hub that cite it."""
    return paper(arxiv_id)


TOOLS = [research_models, research_datasets, research_papers, research_paper]
