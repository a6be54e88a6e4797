"""The ladder without training: registered versions whose manifests chain by lineage, their recorded evals, the
table of every rung (base first; withheld, ⚠ and missing cells), the README section replaced in place; the evals
of a later rung read the whole lineage (contamination over every rung's data, next-action from the first rung's
held-out sessions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.common import write_jsonl
from support.sweeps import unique

from mcp_server.errors import InputError
from mcp_server.evals.job import heldout_source, lineage_data
from mcp_server.evals.ladder import END, START, ladder_table, write_section
from mcp_server.registry import LocalRegistry
from mcp_server.registry.lineage import ancestors, find_step


def _version(tmp_path: Path, name: str, method: str, lineage: list, data: Path, **extra) -> dict:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "tiny:qwen3", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"x")
    run = f"{name}-run"
    manifest = {"method": method, "run_name": run, "config": {"model": {"name": "tiny:qwen3"}, "data": {
        "path": [str(data)]}, **extra.pop("config", {})}, "dataset": {"files": [{"path": str(data)}]},
        "lineage": [*lineage, {"name": name, "method": method, "run_name": run}], **extra}
    (folder / "tunepack_manifest.json").write_text(json.dumps(manifest))
    entry = LocalRegistry().push(folder, name, run_name=run)
    return {"entry": entry, "manifest": manifest, "step": {"name": name, "version": entry.version, "method": method,
                                                           "run_name": run}}


def _results(scores: dict, status: dict | None = None, limit: int | None = 4) -> dict:
    return {"limit": limit, "tasks": [{"task": t, "metric": "pass@1", "n": 4, "scores": s,
                                       "status": (status or {}).get(t, {k: "scored" for k in s})}
                                      for t, s in scores.items()]}


@pytest.fixture
def chain(tmp_path) -> dict:
    project = unique("lad")
    data = {k: write_jsonl(tmp_path / f"{k}.jsonl", [{"text": f"{k} rows"}]) for k in ("sft", "grpo", "ver")}
    sft = _version(tmp_path, f"{project}-sft", "sft", [], data["sft"],
                   heldout={"by": "session", "groups": [{"id": "session:a"}]})
    grpo = _version(tmp_path, f"{project}-grpo", "grpo", [sft["step"]], data["grpo"],
                    heldout={"by": "file", "ids": ["mbpp/511"]})  # held-out prompts, not sessions
    env_step = {k: v for k, v in grpo["step"].items() if k != "version"}  # rollouts name the run, not the version
    ver = _version(tmp_path, f"{project}-ver", "sft", [sft["step"], env_step], data["ver"],
                   traces={"verified": {"kept": 3}})
    return {"project": project, "sft": sft, "grpo": grpo, "ver": ver, "data": data}


def test_the_lineage_is_found_by_version_or_by_run_name(chain):
    assert find_step(chain["grpo"]["step"]) == chain["grpo"]["entry"]
    assert find_step({"name": chain["grpo"]["step"]["name"], "run_name": "other"}) is None
    found = [e.name for e, _ in ancestors(chain["ver"]["manifest"])]
    assert found == [chain["sft"]["entry"].name, chain["grpo"]["entry"].name]


def test_a_later_rung_is_checked_against_every_rungs_data_and_scored_on_the_first_rungs_sessions(chain):
    data = chain["data"]
    assert lineage_data(chain["ver"]["manifest"]) == [str(data["ver"]), str(data["sft"]), str(data["grpo"])]
    assert heldout_source(chain["ver"]["manifest"]) == chain["sft"]["manifest"]  # a GRPO run holds out prompts only
    data["sft"].unlink()
    with pytest.raises(Exception, match=f"{chain['sft']['entry'].name} v1, an earlier rung"):
        lineage_data(chain["ver"]["manifest"])


def test_the_table_has_a_row_a_rung_and_the_readme_section_is_replaced(chain, tmp_path):
    registry = LocalRegistry()
    registry.record_eval(chain["sft"]["entry"], _results({"mbpp": {"base": 0.25, "adapter": 0.5},
                                                          "humaneval": {"base": 0.0, "adapter": 0.25}}))
    registry.record_eval(chain["ver"]["entry"], _results(
        {"mbpp": {"base": 0.25, "adapter": None}, "humaneval": {"base": 0.0, "adapter": 0.75}},
        {"mbpp": {"base": "scored", "adapter": "withheld"}, "humaneval": {"base": "scored", "adapter": "contaminated"}},
        limit=None))
    table = ladder_table(chain["ver"]["entry"].name)
    assert table.tasks == ["humaneval", "mbpp"] and [r.label for r in table.rungs] == [
        "base", "sft", "grpo", "sft (verified rollouts)"]
    base, sft, grpo, ver = table.rungs
    assert base.scores == {"humaneval": "0.000 (n 4)", "mbpp": "0.250 (n 4)"}
    assert sft.scores["mbpp"] == "0.500 (n 4)" and not grpo.evaluated and grpo.scores["mbpp"] == "—"
    assert ver.scores == {"humaneval": "0.750 (n 4) ⚠", "mbpp": "withheld"}
    assert table.missing == [f"eval_start(name='{grpo.name}', version=1, eval={{'tasks': ['humaneval', 'mbpp']}})"]
    assert any("different problem counts or limits" in n for n in table.notes)  # limit 4 beside a full run
    readme = tmp_path / "README.md"
    readme.write_text("# project\n\nintro\n")
    write_section(readme, table.markdown)
    write_section(readme, "| new |\n")  # a second write replaces the section, never appends another
    text = readme.read_text()
    assert text.startswith("# project\n\nintro\n") and text.count(START) == 1 and text.count(END) == 1
    assert "| new |" in text and "sft (verified rollouts)" not in text
    with pytest.raises(InputError, match="not a markdown file"):
        write_section(tmp_path / "notes.txt", table.markdown)
