"""``tunepack research``: search the Hub for models, datasets and papers.

Usage:
    tunepack research models [QUERY] [--filter peft --filter base_model:Qwen/Qwen3-0.6B] [--author A]
                             [--task text-generation] [--sort downloads|likes|trending_score|created_at|last_modified]
                             [--limit 10] [--json]
    tunepack research datasets [QUERY] [--filter task_categories:text-generation] [--sort likes] [--json]
    tunepack research papers QUERY [--limit 10] [--json]
    tunepack research paper ARXIV_ID [--json]
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

SORTS = ["downloads", "likes", "trending_score", "created_at", "last_modified"]


def add_parser(sub) -> None:
    p = sub.add_parser("research", help="search the Hub for models, datasets and papers")
    actions = p.add_subparsers(dest="action", required=True)
    for name, help in (("models", "search models (base models, adapters, baselines)"),
                       ("datasets", "search datasets (training or eval data)")):
        a = actions.add_parser(name, help=help)
        a.add_argument("query", nargs="?", help="words the id must contain")
        a.add_argument("--filter", action="append", default=[], help="a Hub tag that must match (repeatable)")
        a.add_argument("--author", help="only this user or organisation")
        if name == "models":
            a.add_argument("--task", help="pipeline tag, e.g. text-generation")
        a.add_argument("--sort", choices=SORTS, default="downloads")
        a.add_argument("--limit", type=int, default=10)
    a = actions.add_parser("papers", help="search papers (Hub Daily Papers index)")
    a.add_argument("query", help="topic words")
    a.add_argument("--limit", type=int, default=10)
    a = actions.add_parser("paper", help="one paper: abstract, authors, code, models and datasets citing it")
    a.add_argument("query", metavar="ARXIV_ID")
    for a in actions.choices.values():
        a.add_argument("--json", action="store_true")
        a.set_defaults(func=run)


def _num(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def run(args) -> None:
    from . import paper, search_datasets, search_models, search_papers

    result: BaseModel
    if args.action == "models":
        models = search_models(args.query, filters=args.filter, author=args.author, pipeline_tag=args.task,
                               sort=args.sort, limit=args.limit)
        lines = [f"{m.id}  ↓{_num(m.downloads)} ♥{_num(m.likes)}  {m.pipeline_tag or ''}  {m.library or ''}"
                 for m in models.models]
        result = models
    elif args.action == "datasets":
        datasets = search_datasets(args.query, filters=args.filter, author=args.author, sort=args.sort,
                                   limit=args.limit)
        lines = [f"{d.id}  ↓{_num(d.downloads)} ♥{_num(d.likes)}  {d.description or ''}"[:160]
                 for d in datasets.datasets]
        result = datasets
    elif args.action == "papers":
        papers = search_papers(args.query, args.limit)
        lines = [f"{p.id}  {p.published_at or ''}  ▲{_num(p.upvotes)}  {p.title}" for p in papers.papers]
        result = papers
    else:
        detail = paper(args.query)
        lines = [f"{detail.id}  {detail.title}", f"{detail.published_at or ''}  ▲{_num(detail.upvotes)}  "
                 f"{', '.join(detail.authors)}", "", detail.summary or "", "",
                 f"code: {detail.github_repo or '—'}", f"models: {', '.join(detail.linked_models) or '—'}",
                 f"datasets: {', '.join(detail.linked_datasets) or '—'}", detail.url]
        result = detail
    if args.json:
        print(json.dumps(result.model_dump(), indent=2, default=str))
        return
    print("\n".join(lines))
    if hasattr(result, "note"):
        print(f"({result.note})")
