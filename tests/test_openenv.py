"""environment: openenv — an OpenEnv environment (examples/openenv/count_env.py, written in OpenEnv's own types) served
by OpenEnv's real server in its own process, reached through OpenEnv's client inside TRL's environment_factory:
the config's rules and session sizing, one session on its own, and the chain a user runs on the tiny replica:
scripted episodes through the server (`tunepack env-trajectories --openenv`) → an SFT warm start → GRPO from that
adapter via `tunepack run`, with the environment's own counts → its verified rollouts as SFT rows and its verified
and failed ones as DPO pairs (support/openenv.py builds the chain once for the module)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.common import run_cli
from support.openenv import EXAMPLE, GENERATIONS, STEPS, WARM_STEPS, openenv_config, warm_chain

from mcp_server.config import parse_config
from mcp_server.errors import ConfigError
from mcp_server.evals.kit.rollouts import meta_of
from mcp_server.traces.writer import stats_path_for

pytest.importorskip("openenv.core.env_server.http_server", reason="openenv-core is absent (pip install -e '.[env]')")

def _raw(tmp_path: Path, **environment) -> dict:
    return openenv_config(tmp_path, **environment)


def test_sessions_beyond_the_servers_limit_are_refused_before_training_naming_both_numbers(tmp_path):
    raw = _raw(tmp_path, max_sessions=4)
    raw["training"]["gradient_accumulation_steps"] = 2
    with pytest.raises(ConfigError) as err:
        parse_config(raw)
    text = str(err.value)
    assert "holds 8 OpenEnv sessions at once" in text and "max_sessions 4" in text and "lower the batch" in text
    assert parse_config(_raw(tmp_path, max_sessions=8) | {"training": raw["training"]}).environment.max_sessions == 8


def test_an_openenv_environment_needs_one_source_and_the_coding_one_takes_none(tmp_path):
    for bad, words in (({"env": None}, "exactly one of env"), ({"base_url": "http://127.0.0.1:1"}, "exactly one"),
                       ({"env": "count_env"}, "is not 'module:Class'"),
                       ({"env": None, "base_url": "localhost:8000"}, "is no URL")):
        with pytest.raises(ConfigError, match=words):
            parse_config(_raw(tmp_path, **bad))
    with pytest.raises(ConfigError, match="applies to environment: openenv"):
        parse_config(_raw(tmp_path, name="coding"))


@pytest.fixture(scope="module")
def server():
    """One local server of the count environment for the tests that talk to it directly (and the warm start)."""
    from mcp_server.evals.kit import openenv_env as oe

    started = oe.start_server("count_env:CountEnvironment", str(EXAMPLE), max_sessions=2)
    yield started
    started.close()


@pytest.fixture(scope="module")
def chain(server, tmp_path_factory) -> dict:
    return warm_chain(tmp_path_factory.mktemp("openenv-chain"), server.base_url)


def test_a_session_on_the_real_server_opens_steps_scores_and_closes(server):
    from transformers.utils import get_json_schema

    from mcp_server.evals.kit import openenv_env as oe

    Env = oe.session_class(server.base_url, tool="act", budget=2, timeout_s=5.0)
    schema = get_json_schema(Env.act)  # what TRL renders for the model: the Action's field, typed
    assert schema["function"]["parameters"]["properties"]["count"]["type"] == "integer"
    right, wrong, silent = Env(), Env(), Env()
    assert "Count the letter 'a' in 'banana'" in right.reset(id="t", word="banana", letter="a", prompt=[])
    assert right.act(count=3) == "correct" and right.get_reward() == 1.0 and right.reward["verified"]
    wrong.reset(word="banana", letter="a")
    assert wrong.act(count=4).startswith("wrong") and wrong.get_reward() == 0.5
    silent.reset(word="aa", letter="a")
    assert silent.get_reward() == 0.0 and not silent.reward["reached"]
    c = Env.counts
    assert c["sessions_opened"] == c["sessions_closed"] == 3 and not Env.live
    assert c["tool_calls"] == {"act": 2} and c["rewards"] == {"step": 1.5, "unreached": 1}


def test_scripted_rows_without_actions_are_refused_before_any_server_starts():
    from mcp_server.errors import DataError
    from mcp_server.methods.env.openenv_trajectories import openenv_trajectory_rows

    rows = [{"id": "a", "prompt": "How many?", "actions": [{"count": 1}]}, {"id": "b", "prompt": "How many?"},
            {"id": "c", "prompt": "", "actions": [{"count": 1}]}, {"id": "d", "prompt": "x", "actions": [3]}]
    with pytest.raises(DataError) as err:
        openenv_trajectory_rows(rows, env="nowhere:Env")
    assert "3 of 4 rows cannot be scripted" in str(err.value) and "row 1 has no 'actions'" in str(err.value)
    with pytest.raises(DataError, match="Name the environment once"):
        openenv_trajectory_rows(rows[:1], env="count_env:CountEnvironment", base_url="http://127.0.0.1:1")


def test_a_missing_environment_module_is_one_clear_error():
    from mcp_server.evals.kit import openenv_env as oe

    with pytest.raises(oe.OpenEnvError, match="No module named 'nowhere'"):
        oe.start_server("nowhere:Env", str(EXAMPLE), max_sessions=1)


@pytest.mark.slow
def test_the_warm_start_is_scripted_through_the_server_and_trained_in_few_steps(chain):
    episodes, sft = chain["episodes"], chain["sft"]
    print(f"\nscripted episodes: {json.dumps(episodes)}\nwarm start: loss {sft['first_loss']:.3f} → "
          f"{sft['last_loss']:.3f} in {sft['steps']} steps")
    assert episodes["episodes"] == 20 and episodes["verified"] == 10 and episodes["tool_calls"] == {"act": 20}
    assert episodes["sessions_opened"] == episodes["sessions_closed"] == 20 and episodes["mean_reward"] == 0.5
    rows = [json.loads(line) for line in (chain["folder"] / "warm.jsonl").read_text().splitlines()]
    assert [m["role"] for m in rows[0]["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert rows[0]["messages"][0]["content"].endswith("Count the letter 'n' in 'banana' and answer with the tool.")
    assert [t["function"]["name"] for t in rows[0]["tools"]] == ["act"]
    assert sft["steps"] == WARM_STEPS and sft["last_loss"] < sft["first_loss"] / 3


@pytest.mark.slow
def test_grpo_from_the_warm_start_calls_the_tool_and_the_environment_counts_it(chain):
    result, grpo = chain["grpo"], chain["manifest"]["grpo"]
    env = grpo["environment"]
    print(f"\nopenenv counts: {json.dumps(env)}")
    # STEPS x GENERATIONS rollouts in training; 2 held-out tasks for the base model (adapter off) and at each step
    n_train, n_held = STEPS * GENERATIONS, 2 * (STEPS + 2)
    assert env["rollouts"] == n_train + n_held and env["heldout_rollouts"] == n_held and env["batches"] == STEPS
    assert env["sessions_opened"] == env["sessions_closed"] == env["rollouts"] and env["capacity_errors"] == 0
    assert env["tool_calls"]["act"] > 0 and env["reached"] > 0 and set(env["tool_calls"]) == {"act"}
    assert env["rewards"]["unreached"] == env["rollouts"] - env["reached"] and env["verified"] <= env["reached"]
    assert [c["step"] for c in grpo["curve"]] == list(range(STEPS + 1)) and all(c["n"] == 2 for c in grpo["curve"])
    assert chain["manifest"]["start"]["ref"] == f"{chain['sft']['registry_name']}@v1"
    log = Path(result["log_path"]).read_text()
    assert "no token in its environment" in log
    assert f"{GENERATIONS} sessions at once of the server's {GENERATIONS}" in log
    assert f"{env['sessions_opened']} sessions opened, {env['sessions_closed']} closed" in log
    # every rollout (training and held-out) was saved; the server's rewards add up to the counts
    train = sorted((chain["adapter"] / "rollouts" / "train").rglob("*.jsonl"))
    held = sorted((chain["adapter"] / "rollouts" / "eval").rglob("*.jsonl"))
    metas = [meta_of(p) for p in train + held]
    assert len(train) == n_train and len(held) == n_held
    assert sum(m["reward"] for m in metas) == pytest.approx(env["rewards"]["step"])
    assert sum(m["calls"]["act"] for m in metas) == env["tool_calls"]["act"]
    assert sum(m["verified"] for m in metas) == env["verified"]
    rollouts = metas[:n_train]
    assert all(m["split"] == "train" and m["problem"].startswith("count/") for m in rollouts)
    assert any(m["verified"] for m in rollouts) and not all(m["verified"] for m in rollouts), rollouts


@pytest.mark.slow
def test_the_verified_filter_keeps_exactly_the_verified_training_rollouts(chain, tmp_path):
    folder = chain["adapter"] / "rollouts"
    train = sorted((folder / "train").rglob("*.jsonl"))
    verified = {str(p.resolve()) for p in train if meta_of(p)["verified"]}
    converted = run_cli("traces", "convert", str(folder / "train"), "-o", str(tmp_path / "all.jsonl"))
    assert converted.returncode == 0, converted.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    seen = json.loads(stats_path_for(tmp_path / "all.jsonl").read_text())
    assert seen["sessions"] == len(train) and [t["function"]["name"] for t in rows[0]["tools"]] == ["act"]
    assert len(rows) == len(train) - seen["dropped"].get("no_assistant_turn", 0)  # a rollout of one empty message
    only = run_cli("traces", "convert", str(folder), "-o", str(tmp_path / "v.jsonl"), "--only-verified")
    assert only.returncode == 0, only.stderr[-2000:]
    kept = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    stats = json.loads(stats_path_for(tmp_path / "v.jsonl").read_text())["verified"]
    print(f"\nverified filter: {stats}")
    assert {str(Path(r["source"]).resolve()) for r in kept} <= verified and len(kept) == stats["kept"]
    assert stats["kept"] + stats["repeats"] + stats["over_cap"] == len(verified) and stats["heldout"] == 2 * (STEPS + 2)


@pytest.mark.slow
def test_dpo_pairs_come_from_the_openenv_rollouts(chain, tmp_path):
    built = run_cli("dpo", "pairs", str(chain["adapter"]), "-o", str(tmp_path / "pairs.jsonl"), "--json")
    assert built.returncode == 0, built.stderr[-2000:]
    report = json.loads(built.stdout)
    pairs = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    print(f"\ndpo pairs: {report}")
    assert report["pairs"] == len(pairs) >= 1 and report["heldout"] == 2 * (STEPS + 2)
    assert report["rollouts"] == STEPS * GENERATIONS + 2 * (STEPS + 2)
    by_name = {p.name: meta_of(p) for p in (chain["adapter"] / "rollouts" / "train").rglob("*.jsonl")}
    for pair in pairs:
        chosen, rejected = by_name[pair["chosen_source"]], by_name[pair["rejected_source"]]
        assert chosen["verified"] and not rejected["verified"] and chosen["problem"] == rejected["problem"]
        assert pair["chosen"] != pair["rejected"] and pair["chosen"][0]["role"] == "assistant"
