"""Metric curves as a PNG, for an agent that cannot open a dashboard (matplotlib, imported lazily)."""

from __future__ import annotations

import io
from typing import Protocol

from .. import settings
from ..errors import TrackingError
from ..home import home_dir
from .store import MetricPoint

MAX_RUNS, MAX_METRICS = 8, 4


class HistorySource(Protocol):
    """What ``curves_png`` reads: a run's metric points (TrackioStore, or a sweep's own curves)."""

    def history(self, project: str, run: str) -> list[MetricPoint]: ...


def curves_png(store: HistorySource, project: str, runs: list[str], metrics: list[str]) -> bytes:
    if not runs or not metrics:
        raise TrackingError("Name at least one run and one metric to plot.",
                            "e.g. runs=['my-run'], metrics=['loss']; list runs with tracking_runs.")
    if len(runs) > MAX_RUNS or len(metrics) > MAX_METRICS:
        raise TrackingError(f"At most {MAX_RUNS} runs and {MAX_METRICS} metrics fit in one readable image.",
                            "split the request into several images.")
    settings.set_default("MPLCONFIGDIR", str(home_dir("matplotlib")))  # its font cache: in the tunepack home, not ~
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    histories = {run: store.history(project, run) for run in runs}
    fig, axes = plt.subplots(len(metrics), 1, figsize=(7, 2.6 * len(metrics)), squeeze=False)
    try:
        for ax, metric in zip(axes[:, 0], metrics, strict=False):
            plotted = 0
            for run, points in histories.items():
                series = [(p.step, p.values[metric]) for p in points if metric in p.values]
                if series:
                    ax.plot([s for s, _ in series], [v for _, v in series], marker=".", label=run)
                    plotted += 1
            ax.set_title(f"{project}: {metric}" if plotted else f"{metric}: not logged by these runs")
            ax.set_xlabel("step")
            ax.grid(alpha=0.3)
            if plotted:
                ax.legend(fontsize=8)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=90)
    finally:
        plt.close(fig)
    return buffer.getvalue()
