"""Reading Trackio's store after the real trackio library wrote to it."""

import os
import subprocess
import sys

import pytest

from mcp_server.errors import TrackingError
from mcp_server.tracking import TrackioStore

WRITER = """
import trackio
for run, scale in (("alpha", 1.0), ("beta", 2.0), ("alpha", 3.0)):
    trackio.init(project="track-tests", name=run, config={"scale": scale})
    for step in range(4):
        trackio.log({"loss": scale * (4 - step), "note": "text is ignored"}, step=step)
    trackio.finish()
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    directory = tmp_path_factory.mktemp("trackio")
    env = dict(os.environ, TRACKIO_DIR=str(directory))
    done = subprocess.run([sys.executable, "-c", WRITER], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return TrackioStore(directory)


def test_projects_and_runs(store):
    assert "track-tests" in store.projects()
    assert set(store.runs("track-tests")) == {"alpha", "beta"}


def test_history_and_summary_use_the_latest_run_of_a_name(store):
    points = store.history("track-tests", "alpha")
    assert [p.step for p in points] == [0, 1, 2, 3]
    assert [p.values["loss"] for p in points] == [12.0, 9.0, 6.0, 3.0]  # the second "alpha" (scale 3)
    assert "note" not in points[0].values
    summary = store.summary("track-tests", "beta")
    assert summary.first["loss"] == 8.0 and summary.last["loss"] == 2.0
    assert summary.minimum["loss"] == 2.0 and summary.maximum["loss"] == 8.0 and summary.points == 4


def test_config_is_readable(store):
    assert store.config("track-tests", "beta")["scale"] == 2.0


def test_unknown_project_and_run(store):
    with pytest.raises(TrackingError, match="no project 'nope'.*track-tests"):
        store.runs("nope")
    with pytest.raises(TrackingError, match="no run 'gamma'.*alpha"):
        store.history("track-tests", "gamma")
