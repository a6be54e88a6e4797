"""The README's results section, written by `tunepack results readme` and the results_readme tool: an adapter's
eval tables (n, 95 % intervals), its held-out sessions and its loss curve between markers, the rest of the file
kept; written again it is replaced, not repeated; what it cannot report is named with the call that fills it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.common import run_cli
from support.sweeps import unique

from mcp_server.errors import InputError
from mcp_server.registry import LocalRegistry
from mcp_server.report import END, START, write_results
from mcp_server.tracking import TrackioStore

RESULTS = {"sandbox": "confined", "isolated": True, "limit": 4, "tasks": [
    {"task": "humaneval", "metric": "pass@1", "n": 4, "scores": {"base": 0.25, "adapter": 0.5},
     "status": {"base": "scored", "adapter": "scored"},
     "metrics": {"base": {"pass@1": {"score": 0.25, "low": 0.05, "high": 0.7, "n": 4}},
                 "adapter": {"pass@1": {"score": 0.5, "low": 0.15, "high": 0.85, "n": 4}}}}]}


def _adapter(tmp_path: Path, name: str, trackio: dict | None = None) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "tiny:gemma4", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"x")
    manifest = {"method": "sft", "config": {"model": {"name": "tiny:gemma4"}, "data": {
        "path": ["sessions/"], "eval_fraction": 0.2, "eval_seed": 0}},
        "heldout": {"by": "session", "rows": 7, "groups": [{"id": "pi:2026-11-02-a"}, {"id": "pi:2026-11-05-c"}]},
        **({"trackio": trackio} if trackio else {})}
    (folder / "tunepack_manifest.json").write_text(json.dumps(manifest))
    entry = LocalRegistry().push(folder, name)
    return f"{entry.name}@v{entry.version}"


def test_the_cli_writes_the_section_in_place_and_again_replaces_it(tmp_path):
    project = unique("readme")
    import trackio as tr  # the curve written by trackio itself, as a training run writes it

    tr.init(project=project, name="sft-run")
    for step, loss in enumerate((2.0, 1.5, 1.2, 1.0), start=1):
        tr.log({"loss": loss}, step=step)
    tr.finish()
    assert len(TrackioStore().history(project, "sft-run")) == 4
    ref = _adapter(tmp_path, project, {"project": project, "run": "sft-run"})
    name = ref.split("@")[0]
    LocalRegistry().record_eval(LocalRegistry().get(name), RESULTS)
    readme = tmp_path / "README.md"
    readme.write_text("# My agent\n\nIntro kept.\n\n## Usage\n\nKept too.\n")
    for _ in range(2):
        done = run_cli("results", "readme", "--adapter", ref, "--readme", str(readme), "--json")
        assert done.returncode == 0, done.stderr
    section = json.loads(done.stdout)
    text = readme.read_text()
    assert text.startswith("# My agent\n\nIntro kept.") and "## Usage\n\nKept too." in text
    assert text.count(START) == 1 and text.count(END) == 1 and section["replaced"] and section["missing"] == []
    assert "| humaneval | pass@1 | 4 | 0.250 [0.05, 0.70] | 0.500 [0.15, 0.85] |" in text
    assert "2 sessions (7 rows)" in text and "`pi:2026-11-02-a`" in text and "data.eval_seed 0" in text
    (png,) = section["images"]
    assert Path(png).read_bytes()[:4] == b"\x89PNG" and Path(png).parent == tmp_path / "tunepack-results"
    assert f"(tunepack-results/{Path(png).name})" in text
    assert readme.stat().st_mode & 0o777 == 0o644  # the README keeps its mode (not a private temp file's 0600)


def test_an_unevaluated_adapter_is_named_with_the_call_that_fills_it(tmp_path):
    ref = _adapter(tmp_path, unique("readme-none"))
    section = write_results(tmp_path / "README.md", adapters=[ref], curves=False)
    name, version = ref.split("@v")
    assert section.missing == [f"{name} v{version} has no eval results: eval_start(name='{name}', "
                               f"version={version}), then write the section again"]
    assert "Not evaluated yet." in (tmp_path / "README.md").read_text() and section.next_step.startswith(name)


@pytest.mark.parametrize("kwargs, problem", [
    ({}, "Name a sweep, a loop or at least one adapter"),
    ({"adapters": ["x"], "readme_path": "notes.txt"}, "is not a markdown file"),
    ({"adapters": ["bad name!"]}, "is not an adapter reference"),
])
def test_bad_requests_are_refused_before_anything_is_written(tmp_path, kwargs, problem):
    kwargs = {"readme_path": str(tmp_path / kwargs.pop("readme_path", "README.md")), **kwargs}
    with pytest.raises(InputError, match=problem):
        write_results(**kwargs)
    assert not (tmp_path / "README.md").exists() and not (tmp_path / "tunepack-results").exists()


def test_an_eval_that_cannot_fit_its_timeout_or_reach_mbpp_is_refused_before_a_job(tmp_path, monkeypatch):
    """eval_start's checks before any quote: the expected time against timeout_s, MBPP from an unreachable Hub
    (the local copies near the working folder named in the fix)."""
    from mcp_server.config.eval_section import EvalSection
    from mcp_server.errors import EvalError
    from mcp_server.evals.service import start_eval
    from mcp_server.jobs import get_backend

    name = _adapter(tmp_path, unique("estimate")).split("@")[0]
    before = get_backend("local").list()
    with pytest.raises(EvalError, match=r"humaneval: 164 items × 2 models.*over its 10-minute timeout") as caught:
        start_eval(name, ev=EvalSection(tasks=["humaneval"], max_tokens=4096, allow_contaminated=True), timeout_s=600)
    assert "eval.limit" in caught.value.fix
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mbpp.jsonl").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(EvalError, match="which this machine cannot reach") as caught:
        start_eval(name, ev=EvalSection(tasks=["mbpp"], limit=2, allow_contaminated=True))
    assert str(tmp_path / "data" / "mbpp.jsonl") in caught.value.fix and "eval.mbpp_source" in caught.value.fix
    assert get_backend("local").list() == before  # nothing was started


def test_eval_results_next_step_says_when_the_adapter_does_not_beat_the_base():
    from mcp_server.server.eval_tools import _next_step

    def task(name, base, adapter, floor=None):
        return {"task": name, "metric": "tool_name" if name == "next-action" else "pass@1", "scores": {
            "base": base, "adapter": adapter}, "status": {}, **({"baseline": {"metrics": {
                "tool_name": {"score": floor}}}} if floor is not None else {})}

    tie = _next_step({"tasks": [task("next-action", 0.0, 0.0, floor=0.188)]})
    assert tie.startswith("the adapter does not beat the base (next-action tool_name 0.000 vs 0.000, not above "
                          "always calling one tool (0.188))") and "do not publish" in tie
    mixed = _next_step({"tasks": [task("next-action", 0.1, 0.4, floor=0.2), task("humaneval", 0.3, 0.2)]})
    assert "beats the base on next-action tool_name 0.400 vs 0.100 but not on humaneval pass@1 0.200 vs 0.300" in mixed
    assert _next_step({"tasks": [task("humaneval", 0.1, 0.3)]}).startswith("report the table")


def test_register_when_beats_base_withdraws_a_version_that_does_not_beat_the_base(tmp_path):
    """output.register_when beats_base: the gate the pipeline job runs after its eval keeps a version that beats the base
    on every task and withdraws one that does not (kept as evidence, skipped as the newest, said in the README)."""
    from types import SimpleNamespace

    from mcp_server.config import parse_config
    from mcp_server.errors import ConfigError
    from mcp_server.pipeline.job import gate

    with pytest.raises(ConfigError, match="output.register_when beats_base .* eval.tasks is empty"):
        parse_config({"model": {"name": "tiny:qwen3"}, "data": {"path": "rows.jsonl"},
                      "output": {"register_when": "beats_base"}, "eval": {"tasks": []}})
    run = SimpleNamespace(config=SimpleNamespace(output=SimpleNamespace(register_when="beats_base")))
    first = _adapter(tmp_path, name := unique("gate"))
    second = _adapter(tmp_path / "again", name) if (tmp_path / "again").mkdir() is None else None
    registry = LocalRegistry()
    won = {"tasks": [{"task": "humaneval", "metric": "pass@1", "scores": {"base": 0.1, "adapter": 0.3}}]}
    lost = {"tasks": [{"task": "next-action", "metric": "tool_name", "scores": {"base": 0.0, "adapter": 0.0},
                       "baseline": {"metrics": {"tool_name": {"score": 0.19}}}}]}
    assert "withdrawn" not in gate(run, {"registry_name": name, "registry_version": 1}, won)
    out = gate(run, {"registry_name": name, "registry_version": 2}, lost)
    assert out["withdrawn"] == ("does not beat the base: next-action tool_name 0.000 vs 0.000, not above always "
                                "calling one tool (0.190)")
    assert registry.get(name).version == 1 and registry.get(name, 2).withdrawn == out["withdrawn"]
    assert [v.withdrawn is None for v in registry.list(name)] == [True, False]
    section = write_results(tmp_path / "README.md", adapters=[second], curves=False)
    assert "**Withdrawn**: it does not beat the base" in section.markdown and first != second
    always = SimpleNamespace(config=SimpleNamespace(output=SimpleNamespace(register_when="always")))
    assert "withdrawn" not in gate(always, {"registry_name": name, "registry_version": 1}, lost)


def test_grpo_prompts_through_mcp_writes_the_split_and_runs_no_code(tmp_path):
    """The grpo_prompts tool: MBPP's train split as prompt rows (one visible test, the rest scored), the test split
    refused, nothing executed (a reference solution that would write a file leaves none)."""
    from test_server import session

    marker = tmp_path / "ran"
    rows = [{"task_id": 601 + i, "text": f"Write f{i}.", "code": f"def f{i}(x):\n    open({str(marker)!r}, 'w')\n"
             f"    return x + {i}", "test_list": [f"assert f{i}(1) == {1 + i}", f"assert f{i}(2) == {2 + i}"],
             "test_setup_code": ""} for i in range(3)] + [{"task_id": 11, "text": "t", "code": "def g(): pass",
                                                          "test_list": ["assert g() is None"], "test_setup_code": ""}]
    mbpp = tmp_path / "mbpp.jsonl"
    mbpp.write_text("".join(json.dumps(r) + "\n" for r in rows))

    async def flow(client):
        answer = await client.call_tool("grpo_prompts", {"mbpp_path": str(mbpp), "split": "train",
                                                         "output": str(tmp_path / "train.jsonl")})
        assert not answer.is_error, answer.content
        return json.loads(answer.content[0].text)

    done = session(flow)
    written = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert done["written"] == 3 and done["ceiling"] is None and [r["id"] for r in written] == [
        "mbpp/601", "mbpp/602", "mbpp/603"]
    assert all(len(r["tests"]) == 1 and r["tests"][0] not in r["prompt"] for r in written) and not marker.exists()


def test_a_later_rung_reports_the_sessions_its_lineage_held_out(tmp_path):
    """An adapter trained from another, holding nothing out itself, is scored on what its lineage held out: the
    README says those sessions and who held them out, not 'no sessions were held out'."""
    first = _adapter(tmp_path, name := unique("lineage"))
    folder = tmp_path / "later"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "tiny:gemma4", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"x")
    start = {"name": name, "version": int(first.split("@v")[1]), "method": "sft", "run_name": None}
    (folder / "tunepack_manifest.json").write_text(json.dumps({
        "method": "grpo", "run_name": "grpo-run", "config": {"model": {"name": "tiny:gemma4"}, "data": {"path": []}},
        "lineage": [start, {"name": f"{name}-grpo", "method": "grpo", "run_name": "grpo-run"}]}))
    later = LocalRegistry().push(folder, f"{name}-grpo", run_name="grpo-run")
    section = write_results(tmp_path / "README.md", adapters=[f"{later.name}@v{later.version}"], curves=False)
    assert "Held-out split: 2 sessions (7 rows)" in section.markdown and "`pi:2026-11-02-a`" in section.markdown
    assert "an earlier rung of this adapter" in section.markdown and "No sessions were held out" not in section.markdown
