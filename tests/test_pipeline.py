"""The spine end to end: the README's demo once per session, and each bad input's single error."""

import json
import os
from pathlib import Path

import pytest

from support.common import REPO, short_conversation, write_jsonl
from mcp_server.evals.kit.intervals import wilson
from mcp_server.errors import ConfigError, DataError
from mcp_server.pipeline import precheck_data, run_pipeline
from mcp_server.train.data import read_local_rows
from mcp_server.registry import LocalRegistry
from mcp_server.tracking import TrackioStore


@pytest.mark.slow
def test_demo_trains_tracks_registers_and_writes_the_card(demo_run):
    adapter = Path(demo_run["adapter_path"])
    for name in ("adapter_config.json", "adapter_model.safetensors", "tunepack_manifest.json", "README.md",
                 "registry.json", "tokenizer.json"):
        assert (adapter / name).is_file(), name
    assert demo_run["registry_name"] == "tiny-qwen3-agent-sft" and adapter.name == f"v{demo_run['registry_version']}"
    assert demo_run["last_loss"] < demo_run["first_loss"]
    assert demo_run["used_4bit"] is False and demo_run["mask_check"]["problems"] == []
    manifest = json.loads((adapter / "tunepack_manifest.json").read_text())
    assert manifest["quantization"]["reason"] == "auto: no CUDA, plain LoRA"
    assert manifest["dataset"]["eval_rows"] > 0
    card = Path(demo_run["card_path"]).read_text()
    assert "| loss |" in card and "| eval_loss |" in card and "Not evaluated yet" not in card
    # the demo ends with an eval: a complete, honest results table (task, metric, n, base, adapter, contamination)
    (row,) = demo_run["eval"]["tasks"]
    assert row["task"] == "humaneval" and row["n"] == 5 and row["status"] == {"base": "scored", "adapter": "scored"}
    assert row["contaminated_share"] == 0.0 and 0.0 <= row["scores"]["adapter"] <= 1.0
    cells = []
    for label in ("base", "adapter"):  # each score with Wilson's 95 % interval over its 5 problems
        low, high = wilson(round(row["scores"][label] * 5), 5)
        cells.append(f"{row['scores'][label]:.3f} [{low:.2f}, {high:.2f}]")
    line = f"| humaneval | pass@1 | 5 | {cells[0]} | {cells[1]} | 0/5 (0.0%) |"
    assert line in card and "Sandbox: `namespaces`" in card and "first 5 problems" in card
    assert "model-index:" in card  # a clean sandboxed score goes into the Hub metadata
    results = json.loads((adapter / "eval_results.json").read_text())
    assert results["render"]["template_sha256"] and set(results["render"]["kit"]) >= {"sandbox.py", "runner.py"}
    scores = TrackioStore(demo_run["trackio_dir"]).summary(demo_run["trackio_project"], demo_run["trackio_run"] + "-eval")
    assert scores.last["eval/humaneval/pass@1/adapter"] == pytest.approx(row["scores"]["adapter"])
    summary = TrackioStore(demo_run["trackio_dir"]).summary(demo_run["trackio_project"], demo_run["trackio_run"])
    assert summary.first["loss"] == pytest.approx(demo_run["first_loss"])
    assert summary.last["loss"] == pytest.approx(demo_run["last_loss"])
    assert demo_run["trackio_dir"] == os.environ["TRACKIO_DIR"]


def config(tmp_path, data: Path, name: str, windows: str = "auto", **training) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(json.dumps({
        "model": {"name": "tiny:qwen3"}, "data": {"path": str(data), "windows": windows},
        "training": {"max_length": 128, "max_steps": 2, "gradient_checkpointing": False, **training},
        "tracking": {"project": "pipeline-tests"}, "output": {"name": name},
    }))
    return path


def short_rows(n=12):
    return [{"messages": short_conversation(i)} for i in range(n)]


def versions(name):
    return LocalRegistry().list(name)


def test_rows_without_assistant_fail_before_any_job(tmp_path):
    rows = short_rows()
    rows[2] = {"messages": [{"role": "user", "content": "anyone?"}]}
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(DataError, match=r"1 of 12 rows have no assistant turn .*row indices: 2\)"):
        run_pipeline(config(tmp_path, data, "no-assistant"))
    assert versions("no-assistant") == []


def test_malformed_json_line(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(short_rows(1)[0]) + "\n{not json\n")
    with pytest.raises(DataError, match="line 2 is not valid JSON"):
        run_pipeline(config(tmp_path, data, "bad-json"))


def test_file_with_only_blank_lines_has_no_rows(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("\n\n")
    with pytest.raises(DataError, match="has no rows"):
        run_pipeline(config(tmp_path, data, "blank"))


def test_max_length_that_cuts_assistant_tokens_fails_and_leaves_nothing(tmp_path):
    data = write_jsonl(tmp_path / "rows.jsonl", short_rows())
    runs = Path(os.environ["TUNEPACK_HOME"]) / "runs"
    earlier = set(runs.iterdir()) if runs.is_dir() else set()  # other tests' runs may hold adapters
    with pytest.raises(DataError) as err:  # windows would split the rows; with windows off they are cut
        run_pipeline(config(tmp_path, data, "too-short", windows="off", max_length=24))
    assert "training.max_length=24 cuts trained assistant tokens" in err.value.problem
    assert "raise training.max_length to at least" in err.value.fix
    assert versions("too-short") == []
    assert not any((d / "adapter").exists() for d in set(runs.iterdir()) - earlier)


def test_windows_cannot_save_turns_longer_than_max_length(tmp_path):
    data = write_jsonl(tmp_path / "rows.jsonl", short_rows())
    with pytest.raises(DataError) as err:
        run_pipeline(config(tmp_path, data, "no-turn-fits", max_length=24))
    assert "No assistant turn fits training.max_length" in err.value.problem and "raise training.max_length" in err.value.fix
    assert versions("no-turn-fits") == []


def test_tiny_model_needs_local_data(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text("model: {name: 'tiny:qwen3'}\ndata: {hub_id: org/data}\n")
    with pytest.raises(ConfigError, match="builds its tokenizer from local data"):
        run_pipeline(path)


def test_parquet_rows_are_read_with_duckdb(tmp_path):
    import duckdb

    src = write_jsonl(tmp_path / "rows.jsonl", short_rows(3))
    out = tmp_path / "rows.parquet"
    duckdb.sql(f"COPY (SELECT * FROM read_json_auto('{src}')) TO '{out}' (FORMAT parquet)")
    rows = read_local_rows(str(out))
    assert len(rows) == 3 and rows[0]["messages"][1]["content"] == "Run the tests in pkg0."
    cfg_path = config(tmp_path, out, "parquet")
    from mcp_server.config import load_config

    assert precheck_data(load_config(cfg_path)) == 3


def test_one_start_loads_the_config_once_and_reads_the_data_once(monkeypatch, tmp_path):
    import mcp_server.pipeline.run as run_module
    from mcp_server.jobs import LocalBackend

    calls = {"load_config": 0, "read_local_rows": 0}

    def counted(name):
        real = getattr(run_module, name)

        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper

    for name in calls:
        monkeypatch.setattr(run_module, name, counted(name))
    backend = LocalBackend(root=tmp_path / "jobs")
    started = run_module.start_pipeline(str(REPO / "examples" / "demo.yaml"), backend=backend)
    backend.cancel(started.job.id)  # only the start is measured
    assert calls == {"load_config": 1, "read_local_rows": 1}


def test_two_runs_started_in_the_same_second_get_their_own_folders(tmp_path, monkeypatch):
    """A generated run name (config + timestamp, to the second) claims a fresh folder; a second run in that second
    gets -2 rather than sharing (and deleting) the first one's adapter folder."""
    from mcp_server.config import parse_config
    from mcp_server.pipeline import run as run_module

    monkeypatch.setenv("TUNEPACK_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(run_module, "run_name_for", lambda cfg: "same-name-20261204-120000")
    data = write_jsonl(tmp_path / "d.jsonl", [{"messages": short_conversation(0)}])
    cfg = parse_config({"model": {"name": "tiny:qwen3"}, "data": {"path": str(data)}})
    first, second = run_module._claim_run_dir(cfg), run_module._claim_run_dir(cfg)
    assert first[0] == "same-name-20261204-120000" and second[0] == "same-name-20261204-120000-2"
    assert first[1] != second[1] and first[1].is_dir() and second[1].is_dir()
    named = parse_config({"model": {"name": "tiny:qwen3"}, "data": {"path": str(data)},
                          "tracking": {"run_name": "mine"}})
    assert run_module._claim_run_dir(named)[0] == run_module._claim_run_dir(named)[0] == "same-name-20261204-120000"
