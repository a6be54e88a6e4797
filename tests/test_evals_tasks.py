"""Inspect tasks: scripted model outputs (mockllm) give the expected pass@1."""

from __future__ import annotations

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput

from mcp_server.evals.kit.offline import ensure_token_counting
from mcp_server.evals.kit.problems import fenced, load_problems
from mcp_server.evals.kit.sandbox import Limits, Sandbox
from mcp_server.evals.kit.tasks import code_task


@pytest.fixture(scope="module")
def box():
    ensure_token_counting(try_download=False)
    with Sandbox(workers=2, limits=Limits(timeout_s=3)) as sandbox:
        yield sandbox


def scripted(*answers: str) -> dict:
    return {"custom_outputs": [ModelOutput.from_content("mockllm/model", a) for a in answers]}


def test_pass_at_1_of_scripted_answers(box, tmp_path):
    problems = load_problems("humaneval", limit=4)
    answers = [
        fenced(problems[0].text + problems[0].solution),            # whole function: passes
        "I cannot do that.",                                          # no code: fails
        problems[2].solution,                                         # bare body, no fence: passes
        fenced(f"def {problems[3].entry_point}(ops):\n    while True:\n        pass"),  # loops: times out
    ]
    log = inspect_eval(code_task(problems, box), model="mockllm/model", model_args=scripted(*answers),
                       display="none", log_dir=str(tmp_path), max_samples=1)[0]
    assert log.status == "success"
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(0.5)
    statuses = {s.id: s.scores["passes_tests"].metadata["status"] for s in log.samples}
    assert statuses == {"HumanEval/0": "passed", "HumanEval/1": "failed", "HumanEval/2": "passed",
                        "HumanEval/3": "timeout"}


def test_several_samples_average_into_pass_at_1(box, tmp_path):
    problem = load_problems("humaneval", ids=["HumanEval/2"])
    right, wrong = fenced(problem[0].text + problem[0].solution), fenced("def truncate_number(x):\n    return 0")
    log = inspect_eval(code_task(problem, box, samples=4), model="mockllm/model",
                       model_args=scripted(right, wrong, wrong, wrong), display="none", log_dir=str(tmp_path))[0]
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(0.25)
    assert len(log.samples) == 4
