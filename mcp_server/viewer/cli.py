"""``tunepack viewer``: the Datasets Viewer calls from a shell — the Hub's (``--source hf``) or the
local DuckDB twin over files (default), with the same JSON shapes as the MCP viewer tools.

Usage:
    tunepack viewer splits DATASET
    tunepack viewer rows DATASET [--split train] [--offset 0] [--length 5]
    tunepack viewer search DATASET "words to find" [--length 5]
    tunepack viewer filter DATASET --where "\"n_turns\" > 3" [--orderby "\"n_turns\" DESC"]
    tunepack viewer stats DATASET | size DATASET | traces DATASET [--column messages]
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

ACTIONS = ["splits", "rows", "search", "filter", "stats", "size", "traces"]


def add_parser(sub) -> None:
    p = sub.add_parser("viewer", help="Datasets Viewer calls (hub with --source hf, or the local twin over files)")
    p.add_argument("action", choices=ACTIONS)
    p.add_argument("dataset", help="a local path (source local) or a Hub dataset id (source hf)")
    p.add_argument("query", nargs="?", help="(search) the words to look for")
    p.add_argument("--source", default="local", choices=["local", "hf"])
    p.add_argument("--config", default="default")
    p.add_argument("--split", default="train")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--length", type=int, default=5)
    p.add_argument("--where")
    p.add_argument("--orderby")
    p.add_argument("--column", default="messages", help="(traces) the conversations column")
    p.set_defaults(func=run)


def run(args) -> None:
    from . import ViewerError, open_backend, trace_view

    backend = open_backend(args.source)
    out: BaseModel
    try:
        a, d, c, s = args.action, args.dataset, args.config, args.split
        if a == "splits":
            out = backend.splits(d)
        elif a == "rows":
            out = backend.rows(d, c, s, args.offset, args.length)
        elif a == "search":
            if not args.query:
                raise ViewerError("`tunepack viewer search` needs the words to look for.",
                                  'add them after the dataset, e.g. tunepack viewer search DATA "tool error"',
                                  "InvalidParameter")
            out = backend.search(d, c, s, args.query, args.offset, args.length)
        elif a == "filter":
            out = backend.filter(d, c, s, args.where, args.orderby, args.offset, args.length)
        elif a == "stats":
            out = backend.statistics(d, c, s)
        elif a == "size":
            out = backend.size(d)
        else:
            out = trace_view(backend, d, c, s, args.column, 20000 if args.source == "local" else 1000)
    finally:
        close = getattr(backend, "close", None)
        if close:
            close()
    print(json.dumps(out.model_dump(mode="json"), indent=2, default=str)[:20000])
