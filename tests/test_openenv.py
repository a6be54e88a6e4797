"""environment: openenv — an OpenEnv environment (examples/openenv/count_env.py, written in OpenEnv's own types) served
by OpenEnv's real server in its own process, reached through OpenEnv's client inside TRL's environment_factory:
the config's rules and session sizing, one session on its own, and GRPO on the tiny replica via `tunepack run`
with the environment's own counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.common import REPO, run_cli

from mcp_server.config import parse_config
from mcp_server.errors import ConfigError
from mcp_server.evals.kit.rollouts import meta_of

pytest.importorskip("openenv.core.env_server.http_server", reason="openenv-core is absent (pip install -e '.[env]')")

EXAMPLE = REPO / "examples" / "openenv"


def _raw(tmp_path: Path, **environment) -> dict:
    rows = [("banana", "a"), ("apple", "p"), ("cherry", "r"), ("letter", "t"), ("mississippi", "s"), ("coffee", "f"),
            ("balloon", "l"), ("success", "s"), ("address", "d"), ("bookkeeper", "e"), ("committee", "m"),
            ("assess", "s")]
    lines = [json.dumps({"id": f"count/{i}", "prompt": f"How many '{c}' are in '{w}'?", "word": w, "letter": c})
             for i, (w, c) in enumerate(rows)]
    (tmp_path / "train.jsonl").write_text("\n".join(lines[:10]) + "\n")
    (tmp_path / "val.jsonl").write_text("\n".join(lines[10:]) + "\n")
    env = {"name": "openenv", "env": "count_env:CountEnvironment", "env_path": str(EXAMPLE), "max_sessions": 4,
           "max_turns": 2, "tool_budget": 2, **environment}
    return {"model": {"name": "tiny:qwen3"}, "quantization": "none", "data": {"path": str(tmp_path / "train.jsonl")},
            "environment": env,
            "training": {"method": "grpo", "max_steps": 2, "per_device_train_batch_size": 4, "logging_steps": 1,
                         "learning_rate": 0.01},
            "grpo": {"num_generations": 4, "max_completion_length": 24, "heldout_path": str(tmp_path / "val.jsonl"),
                     "signal_check": False},
            "tracking": {"project": "openenv-e2e"}, "output": {"name": "openenv-count"}, "eval": {"tasks": []}}


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


def test_a_session_on_the_real_server_opens_steps_scores_and_closes():
    from transformers.utils import get_json_schema

    from mcp_server.evals.kit import openenv_env as oe

    server = oe.start_server("count_env:CountEnvironment", str(EXAMPLE), max_sessions=2)
    try:
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
    finally:
        server.close()


def test_a_missing_environment_module_is_one_clear_error():
    from mcp_server.evals.kit import openenv_env as oe

    with pytest.raises(oe.OpenEnvError, match="No module named 'nowhere'"):
        oe.start_server("nowhere:Env", str(EXAMPLE), max_sessions=1)


@pytest.mark.slow
def test_grpo_against_a_local_openenv_server_via_tunepack_run(tmp_path):
    path = tmp_path / "openenv.yaml"
    path.write_text(yaml.safe_dump(_raw(tmp_path)))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    adapter = Path(result["adapter_path"])
    grpo = json.loads((adapter / "tunepack_manifest.json").read_text())["grpo"]
    env = grpo["environment"]
    print(f"\nopenenv counts: {json.dumps(env)}")
    # 2 steps x 4 completions in training, and 2 held-out tasks at steps 0, 1 and 2
    assert env["rollouts"] == 2 * 4 + 3 * 2 and env["heldout_rollouts"] == 3 * 2 and env["batches"] == 2
    assert env["sessions_opened"] == env["sessions_closed"] == env["rollouts"] and env["capacity_errors"] == 0
    assert env["rewards"]["unreached"] == env["rollouts"] - env["reached"]
    assert env["verified"] <= env["reached"] and set(env["tool_calls"]) == {"act"}
    assert [c["step"] for c in grpo["curve"]] == [0, 1, 2] and all(c["n"] == 2 for c in grpo["curve"])
    log = Path(result["log_path"]).read_text()
    assert "no token in its environment" in log and "4 sessions at once of the server's 4" in log
    assert f"{env['sessions_opened']} sessions opened, {env['sessions_closed']} closed" in log
    train = sorted((adapter / "rollouts" / "train").rglob("*.jsonl"))
    assert len(train) == 8
    converted = run_cli("traces", "convert", str(adapter / "rollouts" / "train"), "-o", str(tmp_path / "all.jsonl"))
    assert converted.returncode == 0, converted.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert [t["function"]["name"] for t in rows[0]["tools"]] == ["act"]
    metas = [meta_of(p) for p in train]
    assert all(m["split"] == "train" and m["problem"].startswith("count/") and "steps" in m for m in metas)
    assert sum(m["reward"] for m in metas) == pytest.approx(sum(m["reward"] for m in metas if m["steps"]))
    verified = sum(m["verified"] for m in metas)
    only = run_cli("traces", "convert", str(adapter / "rollouts"), "-o", str(tmp_path / "v.jsonl"), "--only-verified")
    if verified:  # held-out rollouts are never kept, the training ones only when verified
        assert only.returncode == 0, only.stderr[-2000:]
        assert 0 < len((tmp_path / "v.jsonl").read_text().splitlines()) <= verified
    else:  # the random replica rarely calls the tool: nothing verified is refused with the reason
        assert only.returncode != 0 and "No rows were left to write" in only.stderr, only.stderr[-2000:]
