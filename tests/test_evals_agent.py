"""mbpp-agent (evals/kit/agent_task.py): MBPP's test split solved inside the coding environment. The rows show the
prompt GRPO's rows show (one visible test, the rest hidden); a scripted model that runs the reference earns pass@1
1.0, one that never runs code earns the penalty; every episode is a Pi session of split ``test`` that the verified
filter never trains on; the config, the score names and the card know the task."""

from __future__ import annotations

import json

import pytest
from support.common import write_jsonl

from mcp_server.evals.kit.agent_task import TASK, agent_problems, agent_rows, run_agent_model
from mcp_server.evals.kit.problems import load_problems, mbpp_prompt_row
from mcp_server.evals.kit.rollouts import meta_of

MBPP = [{"task_id": 11 + i, "text": f"Write a function add_{i}(x) that adds {i} to x.",
         "code": f"def add_{i}(x):\n    return x + {i}", "test_setup_code": "",
         "test_list": [f"assert add_{i}({v}) == {v + i}" for v in (1, 2, 3)]} for i in range(3)]
MBPP += [{"task_id": 700, "text": "train split", "code": "def f():\n    return 1", "test_setup_code": "",
          "test_list": ["assert f() == 1"]}]


class Scripted:
    """A 'model' writing Qwen3's call syntax: run the reference (or not), test, answer."""

    def __init__(self, solutions: dict[str, str], run_code: bool = True):
        self.solutions, self.run_code = solutions, run_code
        self.tokenizer = lambda text, add_special_tokens=False: {"input_ids": text.split()}
        self.budgets: list[list[int]] = []

    def complete(self, batch, max_new_tokens, budgets=None):
        self.budgets.append(list(budgets or []))
        out = []
        for messages, _tools in batch:
            name = next(n for n in self.solutions if n in messages[0]["content"])
            turn = sum(1 for m in messages if m["role"] == "assistant")
            calls = [("run_python", {"code": self.solutions[name]}), ("run_tests", {})] if self.run_code else []
            if turn < len(calls):
                out.append(f"<tool_call>\n{json.dumps({'name': calls[turn][0], 'arguments': calls[turn][1]})}\n"
                           "</tool_call><|im_end|>")
            else:
                out.append(f"```python\n{self.solutions[name]}\n```<|im_end|>")
        return out


@pytest.fixture(scope="module")
def box():
    from mcp_server.evals.kit.sandbox import Sandbox

    sandbox = Sandbox("auto", workers=2).start()
    yield sandbox
    sandbox.close()


@pytest.fixture
def rows(tmp_path):
    source = write_jsonl(tmp_path / "mbpp.jsonl", MBPP)
    return agent_rows(load_problems("mbpp", str(source)))


def test_the_rows_are_the_test_split_with_one_visible_test_as_grpo_prompts_show_it(rows):
    assert [r["id"] for r in rows] == ["mbpp/11", "mbpp/12", "mbpp/13"]  # 700 is a train problem
    assert rows[0] == mbpp_prompt_row(MBPP[0])  # the exact row `tunepack grpo-prompts` writes
    assert rows[1]["visible_test"] == "assert add_1(1) == 2" and rows[1]["tests"] == [
        "assert add_1(2) == 3", "assert add_1(3) == 4"]
    assert "assert add_1(2) == 3" not in rows[1]["prompt"]  # the hidden tests stay hidden
    problems = agent_problems(rows)  # what the contamination check compares: prompt, hidden tests, reference
    assert problems[1].benchmark == TASK and "add_1(3) == 4" in problems[1].tests and problems[1].solution


def test_a_model_that_runs_the_reference_passes_and_one_that_never_runs_code_is_penalised(rows, box, tmp_path):
    solutions = {f"add_{i}(x)": MBPP[i]["code"] for i in range(3)}
    settings = {"box": box, "timeout_s": 5.0, "max_tokens": 400, "label": "adapter"}
    good = Scripted(solutions)
    result = run_agent_model(good, rows, "hermes", settings, tmp_path / "good")
    metrics = result["metrics"]
    assert metrics["pass@1"]["score"] == 1.0 and metrics["pass@1"]["n"] == 3 and metrics["reward"]["score"] == 1.0
    assert metrics["hidden_tests"]["n"] == 6 and metrics["reached"]["score"] == 1.0 and result["turns"] == 3
    assert all(b <= 400 for call in good.budgets for b in call) and good.budgets[1][0] < 400  # the budget shrinks
    sessions = sorted((tmp_path / "good").glob("*.jsonl"))
    metas = [meta_of(p) for p in sessions]
    assert len(sessions) == 3 and {m["split"] for m in metas} == {"test"} and all(m["verified"] for m in metas)
    silent = run_agent_model(Scripted(solutions, run_code=False), rows, "hermes", settings, None)["metrics"]
    assert silent["pass@1"]["score"] == 0.0 and silent["reward"]["score"] == pytest.approx(-0.2)
    assert silent["reached"]["score"] == 0.0


def test_the_config_the_score_names_and_the_card_know_the_task():
    from mcp_server.config.eval_section import EvalSection
    from mcp_server.evals.kit.scorenames import known_prefixes, scores_by_name
    from mcp_server.evals.results import model_index, results_markdown

    assert EvalSection(tasks=["mbpp-agent", "mbpp"]).tasks == ["mbpp-agent", "mbpp"]
    with pytest.raises(ValueError, match="mbpp-agent"):
        EvalSection(tasks=["mbpp_agent"])
    metric = {"score": 0.5, "low": 0.1, "high": 0.9, "n": 2}
    row = {"task": TASK, "metric": "pass@1", "n": 2, "samples": 1, "scores": {"base": 0.0, "adapter": 0.5},
           "status": {"base": "scored", "adapter": "scored"}, "metrics": {"adapter": {
               "pass@1": metric, "reached": metric, "reward": {"score": 0.3, "n": 2}}}, "contamination": None}
    results = {"tasks": [row], "sandbox": "namespaces", "isolated": True, "models": [], "limit": None}
    assert scores_by_name(results) == {"eval/mbpp-agent/pass@1": 0.5, "eval/mbpp-agent/reached": 0.5,
                                       "eval/mbpp-agent/reward": 0.3}
    assert known_prefixes(["mbpp-agent"]) == ["eval/mbpp-agent/"]
    assert "| mbpp-agent | pass@1 | 2 | 0.000 [0.00, 0.66] | 0.500 [0.10, 0.90] |" in results_markdown(results)
    (entry,) = model_index(results)
    assert entry.dataset_type == "google-research-datasets/mbpp" and entry.metric_value == 0.5
