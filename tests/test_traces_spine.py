"""data.format: traces — a config whose data.path holds raw sessions trains on the converted rows."""

import json
from pathlib import Path

import pytest
import yaml

from mcp_server.config import load_config
from mcp_server.errors import ConfigError
from mcp_server.jobs import JobInfo
from mcp_server.pipeline import precheck_data, start_pipeline
from mcp_server.traces.spine import conversion_stats, training_config
from support.traces import FIXTURES


def write_config(tmp_path, data, **extra):
    path = tmp_path / "traces.yaml"
    path.write_text(yaml.safe_dump({"model": {"name": "tiny:qwen3"}, "data": data, "chat_template": "trl:qwen3",
                                    "tracking": {"run_name": "traces-run"}, **extra}))
    return path


def test_config_keeps_session_folders_and_checks_the_combination(tmp_path):
    cfg = load_config(write_config(tmp_path, {"path": str(FIXTURES), "format": "traces",
                                              "traces": {"thinking": "drop"}}))
    assert cfg.data.path == [str(FIXTURES)] and cfg.data.traces.thinking == "drop"
    with pytest.raises(ConfigError, match="data.traces is set but data.format is 'messages'"):
        load_config(write_config(tmp_path, {"path": str(FIXTURES), "format": "messages", "traces": {}}))
    with pytest.raises(ConfigError, match="unknown key 'data.traces.thinkin'"):
        load_config(write_config(tmp_path, {"path": str(FIXTURES), "format": "traces", "traces": {"thinkin": "x"}}))


def test_training_config_converts_with_the_config_template(tmp_path):
    cfg = load_config(write_config(tmp_path, {"path": str(FIXTURES / "codex"), "format": "traces",
                                              "traces": {"drop_harness_context": True}}, chat_template="trl:gptoss"))
    converted = training_config(cfg, tmp_path / "data")
    assert converted.data.format == "messages" and converted.data.traces is None
    assert converted.data.path == [str(tmp_path / "data" / "traces.jsonl")]
    rows = [json.loads(line) for line in (tmp_path / "data" / "traces.jsonl").read_text().splitlines()]
    assert all(len(m.get("tool_calls") or []) <= 1 for r in rows for m in r["messages"])  # gpt-oss shaping
    assert rows[0]["messages"][0]["role"] == "user"  # harness context dropped
    assert conversion_stats(converted)["rows"] == len(rows)
    assert training_config(converted) is converted  # plain rows stay as they are


def test_precheck_counts_the_converted_rows_from_a_cache(tmp_path):
    cfg = load_config(write_config(tmp_path, {"path": str(FIXTURES / "pi"), "format": "traces",
                                              "traces": {"rows": "turn"}}))
    rows = precheck_data(cfg)
    cached = training_config(cfg)
    assert cached.data.format == "prompt_completion"
    assert rows == len(Path(cached.data.path[0]).read_text().splitlines()) > 10
    assert training_config(cfg).data.path == cached.data.path  # same sources and options: same cache


class StubBackend:
    name = "local"
    python = None

    def __init__(self):
        self.specs = []

    def submit(self, spec):
        self.specs.append(spec)
        return JobInfo(id="job-1", backend="local", name=spec.name, stage="SCHEDULING", created_at=0.0)


def test_start_pipeline_converts_into_the_run_folder(tmp_path):
    backend = StubBackend()
    started = start_pipeline(write_config(tmp_path, {"path": str(FIXTURES), "format": "traces"}), backend=backend)
    run_dir = Path(started.run_dir)
    data = run_dir / "data" / "traces.jsonl"
    assert data.is_file() and (run_dir / "data" / "traces.stats.json").is_file()
    run = json.loads((run_dir / "run.json").read_text())
    assert run["config"]["data"]["path"] == [str(data)] and run["config"]["data"]["format"] == "messages"
    script = Path(started.script_path).read_text()
    assert str(data) in script and str(FIXTURES) not in script
    assert backend.specs and backend.specs[0].module == "mcp_server.pipeline.job"
