"""§7: proof that the eval sees the adapter. The tiny model memorises the reference solutions of 3
MBPP test items (in the eval's own prompt format): base + adapter must beat base, the contamination
guard must flag all 3 and withhold the score until the override, and the card then labels it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from support.common import write_jsonl
from mcp_server.evals.kit.problems import fenced, load_problems, user_prompt
from mcp_server.pipeline import run_pipeline
from test_server import ok, session, wait_done

HERE = Path(__file__).resolve().parent
SHARED_MBPP = HERE.parents[1] / "shared" / "data" / "mbpp" / "mbpp.jsonl"
# short items so that prompt + answer fit 128 tokens: the real MBPP when ../shared is there, else our own
SOURCE, IDS = ((SHARED_MBPP, ["mbpp/35", "mbpp/89", "mbpp/234"]) if SHARED_MBPP.is_file()
               else (HERE / "fixtures" / "evals" / "mbpp_mini.jsonl", ["mbpp/11", "mbpp/12", "mbpp/13"]))


@pytest.fixture(scope="module")
def memorised(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("memorise")
    problems = load_problems("mbpp", str(SOURCE), ids=IDS)
    assert [p.id for p in problems] == IDS
    data = write_jsonl(folder / "memorise.jsonl", [
        {"messages": [{"role": "user", "content": user_prompt(p)}, {"role": "assistant", "content": fenced(p.solution)}]}
        for p in problems
    ])
    config = folder / "memorise.yaml"
    config.write_text(yaml.safe_dump({
        "model": {"name": "tiny:qwen3"}, "data": {"path": str(data)},
        "lora": {"r": 64, "alpha": 64},
        "training": {"learning_rate": 0.01, "lr_scheduler_type": "constant", "warmup_ratio": 0.0, "max_steps": 20,
                     "per_device_train_batch_size": 3, "max_length": 128, "logging_steps": 5,
                     "gradient_checkpointing": False, "seed": 1},
        "tracking": {"project": "memorise"}, "output": {"name": "memorise-mbpp"},
        "eval": {"tasks": ["mbpp"], "mbpp_source": str(SOURCE), "ids": IDS, "max_tokens": 64},
    }))
    result = run_pipeline(config)
    return {"result": result, "config": config}


def test_the_guard_flags_all_three_and_withholds_the_adapter_score(memorised):
    result = memorised["result"]
    assert result.eval and not result.eval.get("error"), result.eval
    (row,) = result.eval["tasks"]
    assert row["n"] == 3 and row["contaminated_share"] == 1.0
    assert row["status"] == {"base": "scored", "adapter": "withheld"}
    assert row["scores"]["adapter"] is None and row["scores"]["base"] == 0.0
    card = Path(result.card_path).read_text()
    assert "withheld (contaminated)" in card and "3/3 (100.0%)" in card


def test_with_the_override_the_adapter_beats_the_base_and_is_labelled(memorised):
    name, version = memorised["result"].registry_name, memorised["result"].registry_version

    async def flow(client):
        started = ok(await client.call_tool("eval_start", {
            "name": name, "version": version, "eval": {"tasks": ["mbpp"], "mbpp_source": str(SOURCE), "ids": IDS,
                                                       "max_tokens": 64, "allow_contaminated": True}}))
        assert started["status"] == "submitted", started
        view = await wait_done(client, started["job"]["id"])
        assert view["job"]["stage"] == "COMPLETED", view
        return ok(await client.call_tool("eval_results", {"job_id": started["job"]["id"]})), \
            ok(await client.call_tool("eval_results", {"name": name, "version": version}))

    by_job, by_name = session(flow)
    (row,) = by_job["tasks"]
    assert row["status"] == {"base": "scored", "adapter": "contaminated"}
    assert row["scores"]["adapter"] > row["scores"]["base"], row  # the eval sees the adapter
    assert by_name["tasks"] == by_job["tasks"]
    card = Path(by_job["card_path"]).read_text()
    assert "⚠ contaminated" in card
    assert "model-index" not in card.split("---")[1]  # a contaminated score never reaches model-index
    results = json.loads((Path(by_job["results_path"])).read_text())
    assert results["render"]["kit"]["sandbox_child.py"] and results["render"]["script_sha256"]
