"""Agent sessions straight from a Hub dataset repo (the loopback stand-in holding the shared Pi sessions, or our
fixtures without ../shared): pinned download of only the session files, provenance, conversion in configs,
the CLI, data_inspect and viewer_traces."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from support.common import REPO, SHARED, run_cli
from mcp_server.errors import TraceError
from mcp_server.traces import ConvertOptions, convert

PI = SHARED / "data" / "traces" / "pi"
OWN = REPO / "tests" / "fixtures" / "traces" / "pi"
REPO_ID = "alice/pi-sessions"


def session_files() -> dict[str, bytes]:
    names = ("agent-history__pi-session-01.v3.redacted.jsonl", "agent-sessions__pi-small.v3.jsonl",
             "pi-mono__session-d5dde00.v1.jsonl")
    if all((PI / n).is_file() for n in names):
        return {f"sessions/{n}": (PI / n).read_bytes() for n in names}
    return {f"sessions/{p.name}": p.read_bytes() for p in sorted(OWN.glob("*.jsonl"))}


@pytest.fixture
def sessions_repo(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEPACK_HOME", str(tmp_path / "home"))
    files = {**session_files(), "README.md": b"---\nlicense: mit\n---\nPi sessions\n", "media/screen.png": b"\x89PNG" * 10}
    hub.state.repos[REPO_ID] = {"type": "dataset", "private": False, "files": files,
                                "commits": ["1" * 40, "2" * 40], "tags": ["v1"]}
    return files


def downloads(hub) -> set[str]:
    return {r.path.split("/resolve/", 1)[1].split("/", 1)[1] for r in hub.requests("GET") if "/resolve/" in r.path}


def test_convert_downloads_only_session_files_at_the_pinned_commit(hub, sessions_repo, tmp_path):
    report = convert([f"hf://datasets/{REPO_ID}@v1"], tmp_path / "rows.jsonl", ConvertOptions())
    source = report.source
    assert source["hub_id"] == REPO_ID and source["revision"] == "v1" and source["commit"] == "2" * 40
    sessions = {k: v for k, v in sessions_repo.items() if k.startswith("sessions/")}
    assert {f["path"]: f["sha256"] for f in source["files"]} == {k: hashlib.sha256(v).hexdigest()
                                                                  for k, v in sessions.items()}
    assert downloads(hub) == set(sessions)  # not the README, not the picture
    assert report.rows > 0 and report.sessions == len(sessions)
    stats = json.loads((tmp_path / "rows.stats.json").read_text())
    assert stats["source"]["commit"] == "2" * 40
    again = convert([f"hf://datasets/{REPO_ID}"], tmp_path / "again.jsonl", ConvertOptions())
    assert again.rows == report.rows and downloads(hub) == set(sessions)  # one folder per commit, reused


def test_bad_references_say_what_to_do(hub, sessions_repo, tmp_path):
    with pytest.raises(TraceError, match="has no revision 'nope'"):
        convert([f"hf://datasets/{REPO_ID}@nope"], tmp_path / "x.jsonl")
    with pytest.raises(TraceError, match="was not found on the Hub"):
        convert(["hf://datasets/alice/missing"], tmp_path / "x.jsonl")
    with pytest.raises(TraceError, match="is not a Hub dataset reference"):
        convert(["hf://datasets/not-a-repo"], tmp_path / "x.jsonl")


def test_a_config_with_hub_sessions_converts_and_records_the_source(hub, sessions_repo, tmp_path):
    from mcp_server.config import load_config
    from mcp_server.methods import render_script
    from mcp_server.traces.spine import training_config

    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump({
        "model": {"name": "tiny:gemma4"}, "chat_template": "model",
        "data": {"hub_id": REPO_ID, "revision": "main", "format": "traces", "traces": {"thinking": "drop"}}}))
    cfg = load_config(tmp_path / "cfg.yaml")
    converted = training_config(cfg)
    assert converted.data.hub_id is None and converted.data.path and converted.data.format == "messages"
    script = render_script(converted, run_name="hub-traces")
    info = script.split("RENDER_INFO = ", 1)[1].split("\n\n\n", 1)[0]
    assert "2" * 40 in info and REPO_ID in info and "sha256" in info


def test_cli_converts_a_hub_reference(hub, sessions_repo, tmp_path):
    done = run_cli("traces", "convert", f"hf://datasets/{REPO_ID}", "-o", str(tmp_path / "rows.jsonl"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["source"]["commit"] == "2" * 40


def test_data_inspect_and_trace_view_read_a_sessions_repo(hub, sessions_repo):
    from mcp_server.viewer import inspect_dataset, open_backend, trace_view

    report = inspect_dataset([f"hf://datasets/{REPO_ID}"])
    assert report.num_rows > 0 and report.format == "messages"
    view = trace_view(open_backend("hf"), f"hf://datasets/{REPO_ID}", "default", "train")
    assert view.dataset == f"hf://datasets/{REPO_ID}" and view.rows_scanned == report.num_rows
    assert "assistant" in view.roles and "converted to chat rows" in view.notes[-1]
