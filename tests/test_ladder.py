"""The whole ladder on CPU, through the MCP client as an agent climbs it (/tunepack-ladder): SFT on agent traces of
the coding environment → GRPO with the tests reward → GRPO inside the coding environment → SFT on its verified
rollouts, each rung validated, preflighted, run and registered from the previous rung's adapter; every rung
evaluated on the same five benchmarks; one table in a README. Distillation is left out (no teacher named; it has
its own end-to-end test). About three minutes.

The environment counts its own rollouts, tool calls and rewards; every rollout is a Pi session that `traces
convert` reads; the verified filter keeps exactly the passing ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.common import run_cli
from support.ladder import TASKS, eval_section, ladder_data, rung_configs, verified_config
from support.sweeps import unique
from test_server import ok, session, wait_done

from mcp_server.evals.kit.rollouts import meta_of
from mcp_server.registry import read_manifest
from mcp_server.traces.writer import stats_path_for

pytestmark = pytest.mark.slow


async def _climb(client, config: Path, preflight: bool = True) -> dict:
    """One rung as the contract has it: validate, preflight (and wait for its job), run, wait."""
    out = {"valid": ok(await client.call_tool("pipeline_validate", {"config_path": str(config)}))}
    if preflight:
        out["preflight"] = ok(await client.call_tool("pipeline_preflight", {"config_path": str(config)}))
        job = out["preflight"].get("smoke_job") or out["preflight"].get("job")
        out["checked"] = await wait_done(client, job["id"], rounds=40)
    started = ok(await client.call_tool("pipeline_run", {"config_path": str(config)}))
    out["done"] = await wait_done(client, started["job"]["id"], rounds=60)
    assert out["done"]["job"]["stage"] == "COMPLETED", out["done"].get("error")
    return out


@pytest.fixture(scope="module")
def ladder(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("ladder")
    project = unique("ladder")
    files = ladder_data(folder)
    configs = rung_configs(folder, files, project)
    readme = folder / "project" / "README.md"
    readme.parent.mkdir()
    readme.write_text("# my agent\n\nNotes.\n")

    async def walk(client):
        # the tests-reward rung's RL preflight has its own test (test_grpo_e2e.py): CI's minutes go to the others
        out = {rung: await _climb(client, configs[rung], preflight=rung != "grpo") for rung in ("sft", "grpo", "env")}
        (env,) = ok(await client.call_tool("registry_list", {"name": f"{project}-env"}))["result"]
        configs["verified"] = verified_config(folder, Path(env["path"]) / "rollouts" / "train", project)
        out["verified"] = await _climb(client, configs["verified"])
        for rung in ("sft", "grpo", "env", "verified"):
            started = ok(await client.call_tool("eval_start", {"name": f"{project}-{rung}",
                                                               "eval": eval_section(files)}))
            out[rung]["eval"] = await wait_done(client, started["job"]["id"], rounds=40)
        out["table"] = ok(await client.call_tool("eval_ladder", {"name": f"{project}-verified",
                                                                 "readme_path": str(readme)}))
        return out

    out = session(walk)
    adapters = {rung: Path(out[rung]["done"]["outcome"]["adapter_path"]) for rung in ("sft", "grpo", "env", "verified")}
    return {"folder": folder, "project": project, "files": files, "out": out, "readme": readme,
            "adapters": adapters, "manifests": {k: read_manifest(v) for k, v in adapters.items()}}


def test_every_rung_is_preflighted_run_and_started_from_the_one_before(ladder):
    out, manifests, project = ladder["out"], ladder["manifests"], ladder["project"]
    for rung in ("sft", "env", "verified"):
        assert out[rung]["preflight"]["ok"] and out[rung]["checked"]["job"]["stage"] == "COMPLETED", rung
    env_check = out["env"]["checked"]["outcome"]["rl_check"]  # the RL preflight: ceiling and groups in the env
    assert env_check["ceiling"]["by"] == "environment" and env_check["signal"]["mixed_share"] >= 0.1
    lineage = manifests["verified"]["lineage"]
    assert [(s["name"], s["method"], s.get("environment")) for s in lineage] == [
        (f"{project}-sft", "sft", None), (f"{project}-grpo", "grpo", None), (f"{project}-env", "grpo", "coding"),
        (f"{project}-verified", "sft", None)]
    assert manifests["verified"]["start"]["ref"] == f"{project}-env@v1"  # trained further, not from the base
    assert manifests["verified"]["lora_targets"]["note"].startswith("the starting adapter's")
    card = (ladder["adapters"]["verified"] / "README.md").read_text()
    assert "→ grpo (coding)" in card and "Verified rollouts:" in card


def test_rollouts_reach_the_environment_and_the_reward_comes_from_the_hidden_tests(ladder):
    grpo = ladder["manifests"]["env"]["grpo"]
    env = grpo["environment"]
    print(f"\nenvironment counts: {json.dumps(env)}\nheld-out curve: "
          + "; ".join(f"step {c['step']}: {c['reward']} ± {c['stderr']} (reached {c['reached']}, verified "
                      f"{c['verified']})" for c in grpo["curve"]))
    assert env["name"] == "coding" and env["rollouts"] == 4 * 8  # 4 steps x 2 prompts x 4 generations
    assert env["reached"] / env["rollouts"] >= 0.5, env  # counted by the environment itself
    assert sum(env["tool_calls"].values()) >= env["reached"] and set(env["tool_calls"]) <= {
        "read_file", "run_python", "run_tests", "write_file"}
    assert env["rewards"]["no_code_penalty"] >= env["rollouts"] - env["reached"]  # unreached never ran code
    assert grpo["ceiling"] == {**grpo["ceiling"], "problems": 48 + 8, "solvable": 56, "by": "environment"}
    assert grpo["signal"]["mixed_share"] >= 0.1 and grpo["rewards"] == {}
    log = Path(ladder["out"]["env"]["done"]["job"]["log_path"]).read_text()
    metrics = [json.loads(line.split(" ", 1)[1]) for line in log.splitlines() if line.startswith("TUNEPACK_METRIC")]
    trained = [m for m in metrics if "rewards/CodingEnv/mean" in m]
    assert len(trained) == 4 and all(-0.3 <= m["rewards/CodingEnv/mean"] <= 1.0 for m in trained)
    assert sum(m["tools/call_frequency"] for m in trained) > 0  # TRL's tool loop ran the calls
    assert [c["step"] for c in grpo["curve"]] == [0, 2, 4] and all("reached" in c for c in grpo["curve"])
    card = (ladder["adapters"]["env"] / "README.md").read_text()
    assert "Environment: coding" in card and f"{env['rollouts']} training rollouts" in card


def test_every_rollout_is_a_trace_and_the_verified_filter_keeps_exactly_the_passing_ones(ladder, tmp_path):
    folder = ladder["adapters"]["env"] / "rollouts"
    train, held = sorted((folder / "train").rglob("*.jsonl")), sorted((folder / "eval").rglob("*.jsonl"))
    assert len(train) == 32 and len(held) == 8 * 4  # the base model (adapter off) and 3 evaluations, 8 each
    metas = [meta_of(p) for p in train]
    assert all(m["split"] == "train" and m["problem"].startswith("mbpp/") for m in metas)
    assert [step["method"] for step in metas[0]["lineage"]] == ["sft", "grpo", "grpo"]
    assert sum(m["reward"] for m in metas) == pytest.approx(
        sum(m["hidden_passed"] / m["hidden"] - 0.2 * m["penalties"]["no_code"] - 0.1 * m["penalties"]["over_budget"]
            for m in metas))
    converted = run_cli("traces", "convert", str(folder / "train"), "-o", str(tmp_path / "all.jsonl"))
    assert converted.returncode == 0, converted.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert [t["function"]["name"] for t in rows[0]["tools"]] == ["read_file", "run_python", "run_tests", "write_file"]
    verified = [m for m in metas if m["verified"]]
    report = ladder["manifests"]["verified"]["traces"]["verified"]
    print(f"\nverified rollouts: {report}")
    assert verified and report["rollouts"] == 32 and report["failed"] == 32 - len(verified)
    assert report["kept"] + report["repeats"] + report["over_cap"] == len(verified)
    assert ladder["manifests"]["verified"]["dataset"]["train_rows"] == report["kept"]
    # the held-out (eval) rollouts are never training data, even when the whole rollouts/ folder is given
    both = run_cli("traces", "convert", str(folder), "-o", str(tmp_path / "v.jsonl"), "--only-verified")
    assert both.returncode == 0, both.stderr[-2000:]
    stats = json.loads(stats_path_for(tmp_path / "v.jsonl").read_text())["verified"]
    assert stats["heldout"] == len(held) and stats["kept"] == report["kept"]


def test_every_rung_is_scored_on_the_same_benchmarks_and_the_table_goes_into_the_readme(ladder):
    out, project = ladder["out"], ladder["project"]
    for rung in ("sft", "grpo", "env", "verified"):
        assert out[rung]["eval"]["job"]["stage"] == "COMPLETED", out[rung]["eval"].get("error")
    table = out["table"]
    print("\n" + table["markdown"])
    assert table["adapter"] == f"{project}-verified@v1" and table["tasks"] == TASKS and not table["missing"]
    labels = [r["label"] for r in table["rungs"]]
    assert labels == ["base", "sft", "grpo", "grpo (coding)", "sft (verified rollouts)"]
    for rung in table["rungs"]:
        assert all(cell != "—" for cell in rung["scores"].values()), rung  # every rung on every benchmark
    agent = [r["scores"]["mbpp-agent"] for r in table["rungs"]]
    assert all("(n 4)" in cell and "⚠" not in cell for cell in agent)  # the reworded test split is clean
    text = ladder["readme"].read_text()
    assert text.startswith("# my agent") and text.count("## The post-training ladder") == 1
    assert f"`{project}-env` v1" in text and "mbpp-agent" in text
