"""Sweep specs: dotted keys checked against the config schema, grid / random / explicit expansion."""

import pytest

from support.common import REPO
from mcp_server.sweeps.spec import SweepError, check_key, expand, load_spec, run_config


def spec(**extra):
    return {"name": "s", "base": {"model": {"name": "tiny:qwen3"}, "data": {"path": "x.jsonl"}}, **extra}


def test_grid_is_every_combination_in_order():
    s, _ = load_spec(spec(grid={"training.learning_rate": [1e-4, 2e-4], "lora.r": [8, 16, 32]}))
    runs = expand(s)
    assert len(runs) == 6 and runs[0] == {"training.learning_rate": 1e-4, "lora.r": 8}
    assert runs[-1] == {"training.learning_rate": 2e-4, "lora.r": 32}


def test_random_search_is_reproducible_and_respects_ranges():
    params = {"training.learning_rate": {"low": 1e-5, "high": 1e-2, "log": True},
              "lora.r": {"low": 4, "high": 64, "integer": True}, "training.max_length": [256, 512]}
    first = expand(load_spec(spec(random={"samples": 5, "seed": 3, "params": params}))[0])
    again = expand(load_spec(spec(random={"samples": 5, "seed": 3, "params": params}))[0])
    other = expand(load_spec(spec(random={"samples": 5, "seed": 4, "params": params}))[0])
    assert first == again != other and len(first) == 5
    for run in first:
        assert 1e-5 <= run["training.learning_rate"] <= 1e-2
        assert isinstance(run["lora.r"], int) and 4 <= run["lora.r"] <= 64
        assert run["training.max_length"] in (256, 512)


def test_explicit_runs_are_added_and_duplicates_dropped():
    s, _ = load_spec(spec(grid={"lora.r": [8, 16]}, runs=[{"lora.r": 8}, {"training.learning_rate": 0.5}]))
    assert expand(s) == [{"lora.r": 8}, {"lora.r": 16}, {"training.learning_rate": 0.5}]


def test_set_applies_to_every_run_and_the_run_wins():
    s, _ = load_spec(spec(set={"training.max_steps": 5, "lora.r": 4}, runs=[{"lora.r": 8}]))
    data = run_config(s.base, s, expand(s)[0])
    assert data["training"]["max_steps"] == 5 and data["lora"]["r"] == 8 and data["model"]["name"] == "tiny:qwen3"


@pytest.mark.parametrize("key, message", [
    ("training.lr", "did you mean 'training.learning_rate'"),
    ("lora.rank", "did you mean 'lora.r'"),
    ("lora", "names a whole section"),
    ("training.learning_rate.x", "is a value, not a section"),
    ("trainig.max_length", "did you mean 'training'"),
])
def test_keys_are_checked_against_the_schema(key, message):
    with pytest.raises(SweepError, match=message):
        check_key(key)


def test_bad_specs_say_what_to_fix():
    with pytest.raises(SweepError, match="searches nothing"):
        load_spec(spec())
    with pytest.raises(SweepError, match="unknown key 'gird'"):
        load_spec(spec(gird={"lora.r": [8]}))
    with pytest.raises(SweepError, match="did you mean 'training.learning_rate'"):
        load_spec(spec(grid={"training.lr": [0.1]}))
    with pytest.raises(SweepError, match="at most 64"):
        expand(load_spec(spec(grid={"lora.r": list(range(1, 11)), "training.seed": list(range(7))}))[0])


def test_the_example_spec_loads():
    s, folder = load_spec(REPO / "examples" / "sweep.yaml")
    assert folder == REPO / "examples" and s.base == "demo.yaml" and s.max_concurrent == 2
    assert len(expand(s)) == 4 and s.metric.name == "eval_loss" and s.canary.steps == 2
