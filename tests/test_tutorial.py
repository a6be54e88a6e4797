"""The tutorial this product exists for, in miniature: its configs offline, their CPU twin end to end, and the
contract walked through the MCP client as an agent would (skill → Hub traces → preflight → 2×2 sweep → best →
eval → publish → results written into a project README), each step's outcome asserted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support.common import REPO, run_cli
from mcp_server.registry import LocalRegistry
from mcp_server.tracking import TrackioStore
from support.sweeps import unique, wait_for
from test_server import ok, session, wait_done
from support.tutorial import cpu_sweep, cpu_twin, session_files, write_sessions

pytestmark = pytest.mark.slow
HUB_REPO = "alice/pi-agent-sessions"


def test_the_tutorial_configs_validate_render_and_plan_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: the Hub is unreachable
    config, spec = REPO / "examples" / "gemma4-pi-traces.yaml", REPO / "examples" / "gemma4-pi-sweep.yaml"
    assert run_cli("validate", str(config)).returncode == 0
    rendered = run_cli("render", str(config), "-o", str(tmp_path / "train.py"))
    assert rendered.returncode == 0 and "downloaded and converted when the pipeline runs" in rendered.stderr
    script = (tmp_path / "train.py").read_text()
    assert "google/gemma-4-E2B-it" in script and "raw agent sessions (data.format traces)" in script
    plan = run_cli("sweep", "plan", str(spec), "--json", timeout=300)
    assert plan.returncode == 0, plan.stderr
    body = json.loads(plan.stdout)
    assert body["total_runs"] == 8 and body["max_concurrent"] == 5 and body["canary"]["run"]
    assert all(r["flavor"] == "a10g-large" and r["worst_case_usd"] > 0 and r["expected_s"] > 0 for r in body["runs"])
    longer = {r["changes"]["training.max_length"]: r["expected_s"] for r in body["runs"]}
    assert longer[4096] > longer[2048]  # the time estimate follows each run's max_length
    print("\n" + run_cli("sweep", "plan", str(spec), timeout=300).stdout)


def test_the_cpu_twin_trains_tracks_registers_and_evaluates(tmp_path):
    from mcp_server.pipeline import run_pipeline

    project = unique("tutorial-twin")
    sessions = write_sessions(tmp_path / "sessions")
    result = run_pipeline(cpu_twin(sessions, project, tmp_path))
    manifest = json.loads((Path(result.adapter_path) / "tunepack_manifest.json").read_text())
    assert manifest["model_class"] == "Gemma4ForConditionalGeneration"
    assert manifest["lora_targets"]["outside_language_model"] == 0  # the towers stay untouched
    assert manifest["chat_template"].startswith("model → tunepack:gemma4_v5")
    windows = manifest["mask_check"]["windows"]  # 192 tokens: each session becomes windows, every turn trained once
    assert windows["windowed"] == windows["conversations"] and windows["turns_dropped"] == {}
    assert windows["turns_trained"] == windows["assistant_turns"]
    assert min(manifest["mask_check"]["batches"]["verified_per_batch"]) >= 1  # windows as TRL tokenized them
    assert manifest["traces"]["sessions"] == 12 and manifest["traces"]["source"] is None
    assert result.last_loss < result.first_loss
    summary = TrackioStore(result.trackio_dir).summary(project, result.trackio_run)
    assert summary.last["loss"] == pytest.approx(result.last_loss, rel=1e-3)
    assert LocalRegistry().get(project, result.registry_version).path == result.adapter_path
    (row,) = result.eval["tasks"]
    assert row["n"] == 3 and row["status"] == {"base": "scored", "adapter": "scored"}


def test_the_contract_in_miniature_through_the_mcp_client(hub, tmp_path):
    hub.state.repos[HUB_REPO] = {"type": "dataset", "private": False, "files": session_files(),
                                 "commits": ["a" * 40]}
    project = unique("tutorial")
    sessions = write_sessions(tmp_path / "sessions")  # the tutorial's Hub dataset, as local files for CPU runs
    config = cpu_twin(sessions, project, tmp_path)
    spec = cpu_sweep(config, tmp_path)
    scratch = tmp_path / "project"
    scratch.mkdir()

    async def walk(client):
        out = {"skill": await client.call_tool("skills_read", {"name": "tunepack-pipeline"})}
        out["traces"] = ok(await client.call_tool("viewer_traces", {"source": "hf",
                                                                      "dataset": f"hf://datasets/{HUB_REPO}"}))
        out["preflight"] = ok(await client.call_tool("pipeline_preflight", {"config_path": str(config)}))
        out["smoke"] = await wait_done(client, out["preflight"]["smoke_job"]["id"])
        out["plan"] = ok(await client.call_tool("sweep_plan", {"spec_path": str(spec)}))
        out["submitted"] = ok(await client.call_tool("sweep_submit", {"spec_path": str(spec)}))
        wait_for(out["submitted"]["sweep_id"], timeout=600)
        out["status"] = ok(await client.call_tool("sweep_status", {"sweep_id": out["submitted"]["sweep_id"]}))
        out["selection"] = ok(await client.call_tool("sweep_select", {"sweep_id": out["submitted"]["sweep_id"]}))
        best = out["selection"]["best"]
        out["eval"] = ok(await client.call_tool("eval_start", {
            "name": best["registry_name"], "version": best["registry_version"],
            "eval": {"tasks": ["humaneval"], "limit": 3, "max_tokens": 24}}))
        out["eval_done"] = await wait_done(client, out["eval"]["job"]["id"])
        out["results"] = ok(await client.call_tool("eval_results", {"job_id": out["eval"]["job"]["id"]}))
        out["publish"] = ok(await client.call_tool("registry_publish", {
            "name": best["registry_name"], "version": best["registry_version"], "repo_id": "alice/gemma4-pi-sft"}))
        out["report"] = ok(await client.call_tool("sweep_report", {"sweep_id": out["submitted"]["sweep_id"]}))
        readme = str(scratch / "README.md")
        out["readme"] = [ok(await client.call_tool("results_readme", {
            "sweep_id": out["submitted"]["sweep_id"], "readme_path": readme})) for _ in range(2)]  # again: replaced
        return out

    out = session(walk)
    skill = out["skill"].content[0].text
    assert "preflight" in skill and "approval" in skill and "sweep" in skill
    traces = out["traces"]
    assert traces["rows_scanned"] == 12 and traces["tool_calls"]["read"]["calls"] == 12
    assert traces["calls_without_result"] == 0 and traces["rows_without_assistant"] == []
    assert out["preflight"]["ok"] and out["smoke"]["job"]["stage"] == "COMPLETED"
    assert {c["name"] for c in out["preflight"]["checks"]} >= {"config", "data", "model", "cost"}
    assert out["smoke"]["outcome"]["mask_check"]["status"] == "pass" and out["smoke"]["outcome"]["smoke"]["steps"]
    assert out["plan"]["total_runs"] == 2 and out["plan"]["canary"]["run"]
    assert out["submitted"]["status"] == "submitted"
    assert out["status"]["status"] == "done" and out["status"]["counts"].get("completed") == 2, out["status"]["counts"]
    best = out["selection"]["best"]
    assert best["rank"] == 1 and best["registry_name"] and out["selection"]["recorded"]
    entry = LocalRegistry().get(best["registry_name"], best["registry_version"])
    assert entry.job_id and entry.job_id.startswith("local-")  # the sweep run's own job
    assert out["eval_done"]["job"]["stage"] == "COMPLETED"
    (task,) = out["results"]["tasks"]
    assert task["n"] == 3 and task["status"] == {"base": "scored", "adapter": "scored"}
    push = out["publish"]["push"]
    assert out["publish"]["status"] == "published" and push["repo_id"] == "alice/gemma4-pi-sft"
    files = hub.state.repos["alice/gemma4-pi-sft"]["files"]
    assert {"adapter_model.safetensors", "adapter_config.json", "README.md"} <= set(files)
    assert "Gemma4ForConditionalGeneration" in files["tunepack_manifest.json"].decode()

    first, again = out["readme"]
    assert not first["replaced"] and again["replaced"] and again["missing"] == []
    assert again["adapters"] == [f"{best['registry_name']}@v{best['registry_version']}"]
    text = (scratch / "README.md").read_text()
    assert text.count("## Fine-tuning results") == 1 and text.count("<!-- tunepack:results -->") == 1
    (line,) = [ln for ln in text.splitlines() if ln.startswith("| humaneval | pass@1 | 3 |")]
    (row,) = out["results"]["tasks"]
    assert f"{row['scores']['adapter']:.3f} [" in line and f"{row['scores']['base']:.3f} [" in line  # score, CI
    assert all(f"| {r} |" in text for r in ("r01", "r02")) and "Held-out split:" in text
    (png,) = again["images"]
    assert Path(png).read_bytes()[:4] == b"\x89PNG" and f"]({Path(png).parent.name}/{Path(png).name})" in text
    # every run of the job in the sweep's own Trackio project: the smoke (group smoke), the sweep runs, the eval
    store = TrackioStore()
    runs = store.runs(project)
    assert any(r.startswith("smoke-preflight-") for r in runs), runs
    assert any(r.startswith(best["registry_name"]) and "-v" in r for r in runs), runs  # the eval run
