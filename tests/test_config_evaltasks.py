"""eval.tasks for tool use: next-action (on by default for traces runs that hold out sessions), BFCL categories,
and the sweep metric names they give."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mcp_server.config.eval_section import BFCL_ALL, EvalSection
from mcp_server.config.schema import TrainConfig
from mcp_server.evals.kit.scorenames import known_prefixes, scores_by_name

BASE = {"model": {"name": "tiny:qwen3"}, "data": {"path": "rows.jsonl"}}


def _config(data: dict, eval_: dict | None = None) -> TrainConfig:
    return TrainConfig(**{**BASE, "data": {**BASE["data"], **data}, **({"eval": eval_} if eval_ is not None else {})})


def test_next_action_is_on_by_default_only_for_traces_runs_with_held_out_sessions():
    assert _config({"format": "traces", "eval_fraction": 0.1}).eval.tasks == ["next-action"]
    assert _config({"format": "traces"}).eval.tasks == []  # nothing held out: nothing to score on
    assert _config({"format": "messages", "eval_fraction": 0.1}).eval.tasks == []
    assert _config({"format": "traces", "eval_fraction": 0.1}, {"tasks": []}).eval.tasks == []  # said: kept


def test_bfcl_names_its_categories_and_bfcl_alone_is_all_of_them():
    assert EvalSection(tasks=["bfcl"]).tasks == BFCL_ALL and len(BFCL_ALL) == 13
    assert EvalSection(tasks=["bfcl:simple_python", "next-action"]).tasks == ["bfcl:simple_python", "next-action"]
    with pytest.raises(ValidationError, match="BFCL has no such single-turn category"):
        EvalSection(tasks=["bfcl:multi_turn_base"])
    with pytest.raises(ValidationError, match="next-action, bfcl:<category> or mbpp-agent"):
        EvalSection(tasks=["nextaction"])


def test_scores_have_one_name_each_and_withheld_ones_none():
    results = {"tasks": [
        {"task": "humaneval", "metric": "pass@1", "scores": {"adapter": 0.4}, "status": {"adapter": "scored"}},
        {"task": "next-action", "metric": "tool_name", "scores": {"adapter": 0.6}, "status": {"adapter": "scored"},
         "metrics": {"adapter": {"tool_name": {"score": 0.6}, "stop": {"score": None}}}},
        {"task": "bfcl:simple_python", "metric": "accuracy", "scores": {"adapter": 0.2},
         "status": {"adapter": "withheld"}}]}
    assert scores_by_name(results) == {"eval/humaneval/pass@1": 0.4, "eval/next_action/tool_name": 0.6}
    assert known_prefixes(["next-action", "bfcl:simple_python", "/x/own.jsonl"]) == [
        "eval/next_action/", "eval/bfcl/simple_python", "eval/own/"]
