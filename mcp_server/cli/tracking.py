"""``tunepack tracking``: read Trackio projects, runs, summaries; compare runs; plot curves.

Usage:
    tunepack tracking projects | runs PROJECT | summary PROJECT RUN
    tunepack tracking compare PROJECT RUN RUN … --metric eval_loss
    tunepack tracking plot PROJECT RUN … [--metrics loss eval_loss] -o curves.png
"""

from __future__ import annotations

from .common import print_json


def add_parser(sub) -> None:
    p = sub.add_parser("tracking", help="read Trackio projects, runs and summaries; compare and plot runs")
    actions = p.add_subparsers(dest="action", required=True)
    actions.add_parser("projects", help="Trackio projects").set_defaults(func=cmd_read)
    a = actions.add_parser("runs", help="runs of a project")
    a.add_argument("project")
    a.set_defaults(func=cmd_read)
    a = actions.add_parser("summary", help="a run's summary: steps, first/last/best loss, flags")
    a.add_argument("project")
    a.add_argument("run")
    a.set_defaults(func=cmd_read)
    a = actions.add_parser("compare", help="rank runs on one metric, best first")
    a.add_argument("project")
    a.add_argument("runs", nargs="+")
    a.add_argument("--metric", default="loss", help="e.g. loss, eval_loss, mean_token_accuracy")
    a.set_defaults(func=cmd_compare)
    a = actions.add_parser("plot", help="a PNG of metric curves, one panel per metric, one line per run")
    a.add_argument("project")
    a.add_argument("runs", nargs="+", help="up to 8 runs")
    a.add_argument("--metrics", nargs="+", default=["loss"], help="up to 4 metrics")
    a.add_argument("-o", "--output", default="curves.png")
    a.set_defaults(func=cmd_plot)


def cmd_read(args) -> None:
    from ..tracking import TrackioStore

    store = TrackioStore()
    if args.action == "projects":
        print("\n".join(store.projects()))
    elif args.action == "runs":
        print("\n".join(store.runs(args.project)))
    else:
        print_json(store.summary(args.project, args.run).model_dump())


def cmd_compare(args) -> None:
    from ..tracking import TrackioStore
    from ..tracking.analysis import compare_runs

    print_json([row.model_dump() for row in compare_runs(TrackioStore(), args.project, args.runs, args.metric)])


def cmd_plot(args) -> None:
    from pathlib import Path

    from ..tracking import TrackioStore
    from ..tracking.plot import curves_png

    png = curves_png(TrackioStore(), args.project, args.runs, args.metrics)
    Path(args.output).write_bytes(png)
    print(f"wrote {args.output} ({len(png)} bytes)")
