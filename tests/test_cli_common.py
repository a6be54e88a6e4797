"""What the CLI commands share: Ctrl-C says what became of the job; job log lines become progress lines."""

from __future__ import annotations

import pytest

from mcp_server.cli import main
from mcp_server.cli.common import follow, progress
from mcp_server.errors import JobError
from mcp_server.jobs import LocalBackend, get_backend
from mcp_server.jobs.markers import emit


class Interrupted(LocalBackend):
    """The real local backend, interrupted while waiting (what Ctrl-C does to `backend.wait`)."""

    cancelled: list[str] = []

    def wait(self, job_id, on_line=None, **kwargs):
        raise KeyboardInterrupt

    def cancel(self, job_id):
        self.cancelled.append(job_id)


def test_ctrl_c_while_following_says_whether_the_job_was_cancelled(tmp_path):
    backend = Interrupted(root=tmp_path)
    with pytest.raises(KeyboardInterrupt, match="job j1 was cancelled"):
        follow(backend, "j1", cancel=True)
    assert backend.cancelled == ["j1"]
    with pytest.raises(KeyboardInterrupt, match="stopped following job j2, which keeps running on local"):
        follow(backend, "j2", cancel=False)
    assert backend.cancelled == ["j1"]  # only following stopped


def test_ctrl_c_elsewhere_does_not_claim_a_cancelled_job(monkeypatch, capsys):
    import mcp_server.cli.pipeline as pipeline_cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline_cli, "cmd_validate", interrupted)
    assert main(["validate", "examples/demo.yaml"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "tunepack: interrupted" and "cancel" not in err


def test_unknown_backend_names_every_backend():
    with pytest.raises(JobError, match=r"use one of: local, hf"):
        get_backend("gcp")


def test_progress_shows_metrics_and_tunepack_lines_only(capsys):
    show = progress(verbose=False)
    emit("METRIC", {"step": 2, "max_steps": 10, "loss": 1.5, "learning_rate": 1e-4})
    metric_line = capsys.readouterr().out.strip()
    for line in (metric_line, "[tunepack] mask check passed", "noise from a library"):
        show(line)
    err = capsys.readouterr().err.splitlines()
    assert err == ["  step 2/10  loss 1.5000  lr 1.00e-04", "  [tunepack] mask check passed"]
