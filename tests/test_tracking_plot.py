import os
import subprocess
import sys

import pytest

from mcp_server.errors import TrackingError
from mcp_server.tracking import TrackioStore
from mcp_server.tracking.plot import curves_png

WRITER = """
import trackio
for run in ("r1", "r2"):
    trackio.init(project="plots", name=run)
    for step in range(5):
        trackio.log({"loss": 5 - step, "acc": step / 5}, step=step)
    trackio.finish()
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    directory = tmp_path_factory.mktemp("trackio-plots")
    done = subprocess.run([sys.executable, "-c", WRITER], env=dict(os.environ, TRACKIO_DIR=str(directory)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return TrackioStore(directory)


def test_png_of_several_runs_and_metrics(store):
    png = curves_png(store, "plots", ["r1", "r2"], ["loss", "acc", "not_logged"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


@pytest.mark.parametrize("runs, metrics, needle", [
    ([], ["loss"], "at least one run"),
    (["r1"] * 9, ["loss"], "At most 8 runs"),
    (["r1"], ["a", "b", "c", "d", "e"], "4 metrics"),
])
def test_plot_errors(store, runs, metrics, needle):
    with pytest.raises(TrackingError, match=needle):
        curves_png(store, "plots", runs, metrics)
