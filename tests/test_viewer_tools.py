"""The viewer tools' time budget: long first-use preparation continues in the background."""

import time

import pytest

from mcp_server.errors import DataError
from mcp_server.server import viewer_tools


def test_a_slow_first_call_answers_call_again_and_finishes_in_the_background(monkeypatch):
    monkeypatch.setenv("TUNEPACK_TOOL_BUDGET_S", "0.2")
    done = []

    def slow_preparation():
        time.sleep(0.8)
        done.append(True)
        return "prepared"

    with pytest.raises(DataError, match="still preparing 'big-dataset'") as err:
        viewer_tools._bounded("big-dataset", slow_preparation)
    assert "call the same tool again" in err.value.fix
    with pytest.raises(DataError, match="still preparing"):  # a second call waits on the same work
        viewer_tools._bounded("big-dataset", lambda: "should not start a second preparation")
    time.sleep(0.8)
    assert done == [True]
    assert viewer_tools._bounded("big-dataset", lambda: "fast now") == "fast now"


def test_fast_calls_and_errors_pass_straight_through(monkeypatch):
    monkeypatch.setenv("TUNEPACK_TOOL_BUDGET_S", "5")
    assert viewer_tools._bounded("small", lambda: 42) == 42

    def broken():
        raise DataError("bad where", "fix it")

    with pytest.raises(DataError, match="bad where"):
        viewer_tools._bounded("small", broken)
