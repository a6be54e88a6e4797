"""Next action and BFCL end to end on the Gemma 4 replica: `tunepack run` on converted agent sessions holds out
whole sessions, trains, then one eval job scores base and adapter on every held-out assistant turn and on BFCL
simple_python; the scores reach the card, model-index, Trackio and the sweep metric names, and an adapter that is
not the trained one is refused before any sample.

Why Gemma 4: at this budget (80 steps of 8 rows, lr 0.01) its replica (4 layers, per-layer inputs) learns the
policy: tool_name 0.93 on the 57 held-out calls against the most-frequent-tool baseline's 0.40 (60 steps of 16:
0.86, with one torch thread or two). The Llama 3.2 replica (2 layers) stays at the edge there: 0.47 with two threads, no
parsable call with one (measured 2026-12-03), so it would make the assertion a coin toss. Both families' parsers
are proven by round trip in test_evals_toolcalls.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from support.agent_sessions import write_sessions
from support.common import run_cli

pytest.importorskip("bfcl_eval", reason="BFCL's data: pip install --no-deps bfcl-eval==2026.3.23 (the README's "
                    "test command does)")

STEPS = 80  # tool_name 0.93 here, 0.65 at 60 steps of 8 rows (measured); about 3 minutes with the eval, one core
MARGIN = 0.10  # the adapter beats the most-frequent-tool baseline by at least this on tool_name


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("nextaction")
    sessions = write_sessions(folder / "sessions.jsonl", 80, seed=0)
    config = {
        "model": {"name": "tiny:gemma4"}, "quantization": "none",
        "data": {"format": "traces", "path": str(sessions), "eval_fraction": 0.3},
        "lora": {"r": 32, "alpha": 64, "dropout": 0.0},
        "training": {"learning_rate": 0.01, "max_steps": STEPS, "per_device_train_batch_size": 8,
                     "max_length": 640, "logging_steps": 20, "seed": 3, "warmup_ratio": 0.0},
        "tracking": {"project": "nextaction-e2e"}, "output": {"name": "nextaction-gemma4"},
        "eval": {"tasks": ["next-action", "bfcl:simple_python"], "limit": 20, "max_tokens": 24},
    }
    path = folder / "gemma4.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _row(result: dict, task: str) -> dict:
    return next(r for r in result["eval"]["tasks"] if r["task"] == task)


def test_the_held_out_sessions_are_recorded_and_scored_turn_by_turn(run):
    manifest = json.loads((Path(run["adapter_path"]) / "tunepack_manifest.json").read_text())
    held = manifest["heldout"]
    assert held["by"] == "session" and len(held["groups"]) == 24 and held["total_groups"] == 80
    row = _row(run, "next-action")
    adapter, base, floor = row["metrics"]["adapter"], row["metrics"]["base"], row["baseline"]["metrics"]
    assert row["n"] >= 50 and adapter["tool_name"]["n"] >= 50  # every model turn; call metrics on the calls
    saved = next(r for r in json.loads(Path(run["eval"]["results_path"]).read_text())["tasks"]
                 if r["task"] == "next-action")
    for label in ("base", "adapter"):  # scored with each session's cache carried from turn to turn
        assert saved["decode"][label]["engine"] == "fast" and saved["decode"][label]["reused_tokens"] > 0
    for metric in adapter.values():
        assert metric["low"] <= (metric["score"] or 0) <= metric["high"]
    assert base["parses"]["score"] == 0.0  # the untrained replica writes no call
    assert row["baseline"]["tool"] in {"read", "bash"} and floor["tool_name"]["score"] < 0.5
    assert floor["tool_name"]["n"] == adapter["tool_name"]["n"]  # the same calls, scored by the same rules
    assert adapter["parses"]["score"] > 0.5
    assert adapter["tool_name"]["score"] >= floor["tool_name"]["score"] + MARGIN, (adapter, floor)
    print("\nnext-action, Gemma 4 replica:", json.dumps({"baseline": floor["tool_name"], "base": base["tool_name"],
                                                           "adapter": adapter["tool_name"]}))


def test_bfcl_simple_python_runs_on_twenty_problems_for_both_models(run):
    row = _row(run, "bfcl:simple_python")
    assert row["n"] == 20 and row["status"] == {"base": "scored", "adapter": "scored"}
    assert set(row["metrics"]) == {"base", "adapter"} and row["metrics"]["adapter"]["accuracy"]["n"] == 20
    print("\nBFCL simple_python (20):", {k: v["accuracy"] for k, v in row["metrics"].items()})


def test_the_scores_reach_the_card_trackio_and_the_sweep_metric_names(run):
    from mcp_server.sweeps.monitor import eval_value
    from mcp_server.tracking.store import TrackioStore

    card = Path(run["card_path"]).read_text()
    assert "Next action on" in card and "| tool_name |" in card and "| bfcl:simple_python |" in card
    assert "name: Next action (held-out sessions)" in card and "name: BFCL simple_python" in card
    value = eval_value(run["eval"], "eval/next_action/tool_name")
    assert value == _row(run, "next-action")["scores"]["adapter"]
    assert eval_value(run["eval"], "eval/bfcl/simple_python") == _row(run, "bfcl:simple_python")["scores"]["adapter"]
    store = TrackioStore(run["trackio_dir"])
    runs = [r for r in store.runs("nextaction-e2e") if r.endswith("-eval")]
    last = store.summary("nextaction-e2e", runs[-1]).last
    assert last["eval/next_action/tool_name/adapter"] == value
    assert "eval/next_action/tool_name/baseline" in last and "eval/bfcl/simple_python/base" in last


def test_an_adapter_that_is_not_the_trained_one_is_refused(run, tmp_path):
    from mcp_server.evals.kit.errors import KitError
    from mcp_server.evals.kit.integrity import check_model
    from mcp_server.evals.render import expected_model

    manifest = json.loads((Path(run["adapter_path"]) / "tunepack_manifest.json").read_text())
    expected = expected_model(manifest)
    config = json.loads((Path(run["adapter_path"]) / "adapter_config.json").read_text())
    model = {"label": "adapter", "base": config["base_model_name_or_path"], "adapter": run["adapter_path"]}
    check_model(model, expected)  # the registered adapter passes
    swapped = Path(shutil.copytree(run["adapter_path"], tmp_path / "swapped"))
    template = swapped / "chat_template.jinja"
    template.write_text(template.read_text() + "\n{# edited #}")
    with pytest.raises(KitError, match="chat template .* is not the one the run trained with"):
        check_model({**model, "adapter": str(swapped)}, expected)
    other = Path(shutil.copytree(run["adapter_path"], tmp_path / "other-base"))
    (other / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": "meta-llama/x"}))
    with pytest.raises(KitError, match="was trained on meta-llama/x"):
        check_model({**model, "adapter": str(other)}, expected)
    with pytest.raises(KitError, match="base is"):
        check_model({**model, "base": "meta-llama/x"}, expected)


def test_the_fast_scorer_writes_the_plain_scorers_turns_on_the_trained_replica(run):
    """The accelerated scorer (the session's cache reused from turn to turn, turns batched and refilled) against
    the plain one (each prompt from scratch in padded generate batches), turn by turn on the trained adapter: any
    turn that differs is listed with the top-2 logit margin where the two part, and may only part at a near tie."""
    import os

    from support.scoring import compare

    from mcp_server.evals.kit.generate import load_generator
    from mcp_server.evals.kit.nextaction import run_model
    from mcp_server.evals.kit.toolruns import _next_action_turns

    runs = Path(os.environ["TUNEPACK_HOME"]) / "runs"
    spec = next(s for s in (json.loads(p.read_text())["spec"] for p in runs.glob("*/eval/eval_run.json"))
                if any(m.get("adapter") == run["adapter_path"] for m in s["models"]))
    turns, _ = _next_action_turns(spec, lambda line: None)
    smoke, _ = _next_action_turns({**spec, "limit": 2}, lambda line: None)  # eval.limit: the first 2 sessions
    assert len({t.session for t in smoke}) == 2 and smoke == turns[:len(smoke)]
    model = next(m for m in spec["models"] if m.get("adapter"))
    gen = load_generator(model, backend="hf")
    max_length, max_tokens = spec["next_action"]["max_length"], 64
    fast = run_model(gen, turns, "gemma4", max_tokens, max_length, None, engine="fast")
    plain = run_model(gen, turns, "gemma4", max_tokens, max_length, None, engine="plain")
    assert fast["decode"]["reused_tokens"] > 0.5 * fast["decode"]["prompt_tokens"]  # sessions read about once

    assert fast["contexts"] == plain["contexts"]
    margins, parted = compare(gen, turns, fast, plain)
    share = sum(m > 1e-3 for m in margins) / len(margins)
    print(f"\n{len(turns)} turns: fast {fast['seconds_per_100_turns']} s, plain {plain['seconds_per_100_turns']} s per "
          f"100 turns; {fast['decode']}; top-2 margin > 1e-3 at {share:.1%} of {len(margins)} positions; "
          f"turns that differ (index, session, turn, token, margin): {parted}")
    assert share >= 0.95, "the replica is not trained enough for a turn-by-turn comparison"
    assert all(m is not None and m < 1e-3 for *_, m in parted), parted
    assert fast["metrics"] == plain["metrics"] or parted
