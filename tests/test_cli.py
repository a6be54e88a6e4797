"""The `tunepack` command: the README's commands, and failures as one clean line."""

import json

import pytest

from conftest import REPO, run_cli


def test_validate_ok():
    done = run_cli("validate", "examples/demo.yaml")
    assert done.returncode == 0 and done.stdout.startswith("ok: examples/demo.yaml is valid")


def test_validate_json_fills_defaults():
    done = run_cli("validate", "examples/demo.yaml", "--json")
    assert json.loads(done.stdout)["lora"]["target_modules"] == "all-linear"


@pytest.mark.parametrize("text, needle", [
    ("model: {name: x/y\n", "not valid YAML at line"),
    ("model: {name: x/y}\ndata: {path: nowhere.jsonl}\n", "data.path 'nowhere.jsonl' does not exist"),
    ("model: {name: x/y}\ndata: {path: a.jsonl}\ntraining: {epochs: 3}\n", "unknown key 'training.epochs'"),
])
def test_errors_are_one_line_with_a_fix(tmp_path, text, needle):
    (tmp_path / "a.jsonl").write_text('{"messages": []}\n')
    (tmp_path / "c.yaml").write_text(text)
    done = run_cli("validate", str(tmp_path / "c.yaml"))
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tunepack: error: ") and needle in lines[0] and "Fix:" in lines[0]


def test_render_writes_a_runnable_script(tmp_path):
    out = tmp_path / "train.py"
    done = run_cli("render", "examples/demo.yaml", "-o", str(out), "--run-name", "cli-render")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("# /// script") and "'run_name': 'cli-render'" in text
    compile(text, str(out), "exec")


@pytest.mark.slow
def test_lists_after_the_demo(demo_run):
    registry = json.loads(run_cli("registry", "list", "--json").stdout)
    assert any(v["path"] == demo_run["adapter_path"] for v in registry)
    jobs = json.loads(run_cli("jobs", "list", "--json", "--label", f"run={demo_run['trackio_run']}").stdout)
    assert [j["id"] for j in jobs] == [demo_run["job_id"]] and jobs[0]["stage"] == "COMPLETED"
    logs = run_cli("jobs", "logs", demo_run["job_id"], "--tail", "1").stdout
    assert logs.startswith("TUNEPACK_DONE") or "Trackio" in logs or logs.strip()
    assert demo_run["trackio_project"] in run_cli("tracking", "projects").stdout.split()
    summary = json.loads(run_cli("tracking", "summary", demo_run["trackio_project"], demo_run["trackio_run"]).stdout)
    assert summary["last"]["loss"] == pytest.approx(demo_run["last_loss"])


def test_jobs_command_needs_an_id():
    done = run_cli("jobs", "status")
    assert done.returncode == 1 and "needs a job id" in done.stderr


def test_version():
    assert run_cli("--version").stdout.startswith("tunepack ")
