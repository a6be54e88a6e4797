"""The `tunepack` command: the README's commands, and failures as one clean line."""

import json
from pathlib import Path

import pytest

from support.common import run_cli


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


def test_tracking_compare_and_plot_twins(demo_run, tmp_path):
    project, run = demo_run["trackio_project"], demo_run["trackio_run"]
    ranked = json.loads(run_cli("tracking", "compare", project, run, "--metric", "loss").stdout)
    assert ranked[0]["run"] == run and ranked[0]["last"] == pytest.approx(demo_run["last_loss"])
    out = tmp_path / "curves.png"
    done = run_cli("tracking", "plot", project, run, "-o", str(out))
    assert done.returncode == 0 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_registry_push_twin_adds_a_version_with_its_card(demo_run):
    done = run_cli("registry", "push", demo_run["adapter_path"], "cli-twin-copy")
    assert done.returncode == 0, done.stderr
    version = json.loads(done.stdout)
    assert version["name"] == "cli-twin-copy" and version["version"] == 1
    assert Path(version["path"], "README.md").is_file()  # the manifest was there, so the card was written


def test_jobs_submit_hardware_and_cost_twins(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("import sys\nprint('hello', *sys.argv[1:])\n")
    done = run_cli("jobs", "submit", "--label", "twin=yes", str(script), "a", "--b")  # after SCRIPT: the script's
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    waited = json.loads(run_cli("jobs", "wait", job["id"]).stdout)
    assert waited["job"]["stage"] == "COMPLETED"
    assert "hello a --b" in run_cli("jobs", "logs", job["id"]).stdout
    assert json.loads(run_cli("jobs", "list", "--label", "twin=yes", "--json").stdout)[0]["id"] == job["id"]
    assert "a10g-small" in run_cli("jobs", "hardware").stdout
    quote = json.loads(run_cli("jobs", "cost", "--flavor", "a10g-small", "--timeout", "3600").stdout)
    assert quote["paid"] and quote["worst_case_usd"] > 0
    misplaced = run_cli("jobs", "submit", str(script), "--backend", "hf", "--flavor", "t4-small")
    assert misplaced.returncode == 1 and "--backend comes after SCRIPT" in misplaced.stderr
    bad = run_cli("jobs", "submit", str(tmp_path / "missing.py"))
    assert bad.returncode == 1 and "does not exist" in bad.stderr


def test_skills_read_twin():
    assert "name: tunepack-sft" in run_cli("skills", "read", "tunepack-sft").stdout
    refused = run_cli("skills", "read", "tunepack-sft", "../../pyproject.toml")
    assert refused.returncode == 1 and "is not a file of skill" in refused.stderr


def test_preflight_twin_reports_checks_and_the_quote():
    done = run_cli("preflight", "examples/demo.yaml", "--no-smoke", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["smoke_job"] is None
    assert {c["name"] for c in report["checks"]} >= {"config"}
