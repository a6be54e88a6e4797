"""The HF Jobs backend through huggingface_hub against the loopback stand-in."""

import os
import stat
import subprocess

import pytest

from mcp_server.errors import JobError, TunepackError
from mcp_server.jobs import JobSpec, get_backend
from mcp_server.jobs.hf import UV_IMAGE, inline_command
from mcp_server.jobs.transport import script_from_command


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import sys\nprint('args', sys.argv[1:])\n")
    return path


def test_submit_sends_the_script_inline_and_the_token_as_a_secret(hub, script, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "wandb-secret-value")
    job = get_backend("hf").submit(JobSpec(script=str(script), args=["--output-dir", "out dir"], name="run-1",
                                           labels={"project": "p", "stage": "train"}, secrets=["WANDB_API_KEY"],
                                           env={"TRACKIO_DIR": "/tmp/t"}, timeout_s=3600, flavor="a10g-small"))
    (req,) = hub.requests("POST", r"/api/jobs/alice")
    body = req.body
    assert req.headers["authorization"] == f"Bearer {hub.state.token}"
    assert body["dockerImage"] == UV_IMAGE and body["flavor"] == "a10g-small" and body["timeoutSeconds"] == 3600
    assert body["secrets"] == {"HF_TOKEN": hub.state.token, "WANDB_API_KEY": "wandb-secret-value"}
    assert body["environment"] == {"TRACKIO_DIR": "/tmp/t"} and hub.state.token not in str(body["environment"])
    assert body["labels"] == {"project": "p", "stage": "train", "name": "run-1"}
    assert body["command"][:2] == ["bash", "-c"] and str(script) not in body["command"][2]
    assert job.stage == "SCHEDULING" and job.url.endswith(f"/jobs/alice/{job.id}") and job.labels["project"] == "p"


def test_inline_command_really_runs_the_script(tmp_path, script):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    uv = fake_bin / "uv"  # stands in for `uv run FILE ARGS` on the job machine
    uv.write_text('#!/bin/sh\nshift\nexec python3 "$@"\n')
    uv.chmod(uv.stat().st_mode | stat.S_IEXEC)
    command = inline_command(script.read_text(), ["--name", "a b", "$HOME"])
    done = subprocess.run(command, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "args ['--name', 'a b', '$HOME']"
    assert script_from_command(command) == script.read_text()


def test_status_logs_list_cancel_and_hardware(hub, script):
    backend = get_backend("hf")
    job = backend.submit(JobSpec(script=str(script), labels={"sweep": "s1"}, timeout_s=600))
    other = backend.submit(JobSpec(script=str(script), labels={"sweep": "s2"}, timeout_s=600))
    hub.state.logs[job.id] = ["starting", 'TUNEPACK_METRIC {"step": 1, "loss": 2.0}', "done"]
    hub.set_stage(job.id, "RUNNING")
    info = backend.status(job.id)
    assert info.stage == "RUNNING" and info.started_at
    assert backend.logs(job.id).splitlines() == ["starting", 'TUNEPACK_METRIC {"step": 1, "loss": 2.0}', "done"]
    assert backend.logs(job.id, tail=1) == "done"
    assert hub.requests("GET", rf"/api/jobs/alice/{job.id}/logs")[-1].query == {"tail": ["1"]}
    assert [j.id for j in backend.list(labels={"sweep": "s1"})] == [job.id]
    assert [j.id for j in backend.list(stage="RUNNING")] == [job.id]
    assert backend.cancel(other.id).stage == "CANCELED"
    hub.set_stage(job.id, "COMPLETED")
    assert backend.wait(job.id, timeout_s=5, poll_s=0.1).stage == "COMPLETED"
    prices = {h.name: h.price_per_hour_usd for h in backend.hardware()}
    assert prices["t4-small"] == pytest.approx(0.4, abs=0.01) and prices["cpu-basic"] == pytest.approx(0.01, abs=0.001)


@pytest.mark.parametrize("status, needle", [
    (401, "token was rejected"), (402, "payment required"), (403, "lacks job.write permission on 'alice'"),
])
def test_http_errors_say_what_to_do(hub, script, status, needle):
    backend = get_backend("hf")
    hub.state.fail[("POST", "/api/jobs/alice")] = status
    with pytest.raises(TunepackError) as err:
        backend.submit(JobSpec(script=str(script), timeout_s=600))
    assert needle in err.value.problem and err.value.fix and hub.state.token not in str(err.value)


def test_unknown_job_and_bad_specs(hub, script):
    backend = get_backend("hf")
    with pytest.raises(TunepackError, match="job 'nope' was not found"):
        backend.status("nope")
    with pytest.raises(JobError, match="rendered scripts only"):
        backend.submit(JobSpec(module="mcp_server.pipeline.job"))
    with pytest.raises(JobError, match="look like secrets"):
        backend.submit(JobSpec(script=str(script), env={"HF_TOKEN": "x"}))
    with pytest.raises(JobError, match="OTHER_SECRET, which is not set"):
        backend.submit(JobSpec(script=str(script), secrets=["OTHER_SECRET"]))


def test_no_token_or_a_literal_placeholder(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # no saved login either
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(TunepackError, match="No Hugging Face token"):
        get_backend("hf")
    monkeypatch.setenv("HF_TOKEN", "$HF_TOKEN")
    with pytest.raises(TunepackError, match="literal placeholder"):
        get_backend("hf")
