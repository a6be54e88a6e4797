"""A GRPO adapter trained on from a registered adapter: its eval scores that starting adapter as a third model
("start"), and the kit accepts under that label only the adapter the run recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcp_server.config.schema import EvalSection
from mcp_server.evals import job as eval_job
from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.integrity import check_model
from mcp_server.evals.render import expected_model
from mcp_server.registry import AdapterVersion

BASE = "Qwen/Qwen3-0.6B"


def _adapter(folder: Path, base: str = BASE) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base}))
    return folder


def _start(folder: Path | None, hub_repo: str | None = None, hub_commit: str | None = None) -> dict:
    return {"name": "tiny-sft", "version": 2, "method": "sft", "base": BASE,
            "adapter": str(folder) if folder else None, "hub_repo": hub_repo, "hub_commit": hub_commit}


def _grpo_entry(tmp_path: Path, start: dict | None, hub_repo: str | None = None) -> AdapterVersion:
    folder = _adapter(tmp_path / "grpo")
    manifest = {"model_path": BASE, "method": "grpo",
                "config": {"model": {"name": BASE}, "data": {"path": [str(tmp_path / "gone.jsonl")]}},
                **({"grpo": {"start": start}} if start else {})}
    (folder / "tunepack_manifest.json").write_text(json.dumps(manifest))
    return AdapterVersion(name="tiny-grpo", version=1, path=str(folder), created_at=0.0, hub_repo=hub_repo,
                          hub_commit="g1" if hub_repo else None)


def _labels(models: list[dict]) -> list[str]:
    return [m["label"] for m in models]


def test_a_local_eval_scores_the_start_adapter_from_its_folder(tmp_path):
    start = _adapter(tmp_path / "registry" / "tiny-sft" / "v2")
    models = eval_job.models_for(_grpo_entry(tmp_path, _start(start, "alice/tiny-sft", "s1")))
    assert _labels(models) == ["base", "adapter", "start"]
    assert models[2] == {"label": "start", "base": BASE, "adapter": str(start)}  # the folder, not the Hub copy


def test_a_start_adapter_that_cannot_be_loaded_is_left_out(tmp_path):
    gone = tmp_path / "registry" / "tiny-sft" / "v2"
    assert _labels(eval_job.models_for(_grpo_entry(tmp_path, _start(gone)))) == ["base", "adapter"]
    remote = _grpo_entry(tmp_path / "remote", _start(_adapter(tmp_path / "sft")), hub_repo="alice/tiny-grpo")
    assert _labels(eval_job.models_for(remote, remote=True)) == ["base", "adapter"]  # a local folder only
    assert _labels(eval_job.models_for(_grpo_entry(tmp_path / "plain", None))) == ["base", "adapter"]


def test_the_hub_copy_is_read_at_the_recorded_commit(tmp_path):
    remote = _grpo_entry(tmp_path, _start(_adapter(tmp_path / "sft"), "alice/tiny-sft", "s1"), hub_repo="alice/g")
    models = eval_job.models_for(remote, remote=True)
    assert models[1] == {"label": "adapter", "base": BASE, "adapter": "alice/g", "adapter_revision": "g1"}
    assert models[2] == {"label": "start", "base": BASE, "adapter": "alice/tiny-sft", "adapter_revision": "s1"}
    gone = _grpo_entry(tmp_path / "local", _start(tmp_path / "deleted", "alice/tiny-sft", "s1"))
    assert eval_job.models_for(gone)[2] == models[2]  # here too, when its folder is gone but it was published


def test_the_kit_accepts_only_the_recorded_start_adapter(tmp_path):
    start = _adapter(tmp_path / "sft")
    entry = _grpo_entry(tmp_path, _start(start, "alice/tiny-sft", "s1"))
    expected = expected_model(json.loads((Path(entry.path) / "tunepack_manifest.json").read_text()))
    assert expected["start"] == {"base": BASE, "adapter": str(start), "hub_repo": "alice/tiny-sft", "hub_commit": "s1"}
    model = eval_job.models_for(entry)[2]
    check_model(model, expected)  # the recorded folder
    download = _adapter(tmp_path / "hub-cache" / "s1")
    check_model({**model, "adapter": str(download), "adapter_repo": "alice/tiny-sft", "adapter_revision": "s1"},
                expected)  # the Hub copy at the recorded commit, as the eval script downloads it
    other = shutil.copytree(start, tmp_path / "other-sft")
    with pytest.raises(KitError, match=f"adapter {other}\\) is not the adapter the GRPO run started from "
                                       f"\\({BASE}, adapter {start}\\)"):
        check_model({**model, "adapter": str(other)}, expected)
    with pytest.raises(KitError, match="is not the adapter the GRPO run started from"):
        check_model({**model, "adapter": str(download), "adapter_repo": "alice/tiny-sft", "adapter_revision": "s2"},
                    expected)
    with pytest.raises(KitError, match="is not the adapter the GRPO run started from"):
        check_model({**model, "base": "meta-llama/x"}, expected)
    with pytest.raises(KitError, match="is not the adapter the GRPO run started from"):
        check_model({"label": "start", "base": BASE}, expected)  # the base alone is no starting adapter
    plain = expected_model({"model_path": BASE, "config": {"model": {"name": BASE}}})
    assert plain["start"] is None
    with pytest.raises(KitError, match="started from \\(it recorded none\\)"):
        check_model(model, plain)  # a run that started from no adapter has no start model to compare with


def test_the_rendered_script_carries_the_start_model_and_its_record(tmp_path):
    start = _adapter(tmp_path / "sft")
    entry = _grpo_entry(tmp_path, _start(start))
    script = eval_job.prepare(entry, EvalSection(tasks=["humaneval"], allow_contaminated=True), tmp_path / "run")
    spec = json.loads((tmp_path / "run" / "eval_run.json").read_text())["spec"]
    assert spec["models"][2] == {"label": "start", "base": BASE, "adapter": str(start)}
    assert spec["expected"]["start"]["adapter"] == str(start)
    assert "'label': 'start'" in script.read_text()
