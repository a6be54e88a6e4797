"""Reward hacking against every scorer: the evals' scorer (Inspect's, and ``verdict.score`` that it shares), GRPO's
``tests`` reward, a reward file's number, the coding environment's reward and the ``mbpp-agent`` loop over it.

The corpus (tests/support/rewardhacks.py) holds answers that return objects equal to everything, subclasses of
int/float/str/list with forged operators, reflected operators, a lying or reassigned ``__class__``, NaN,
``__hash__`` tricks, patched ``math``/builtins/``sys.modules``, the tests' own names rebound from the answer's
frames, a fake result line, an exception that says "passed", generators and huge outputs. Each scores 0 with
every scorer; the honest answer scores full marks with every one. Before (57b1214): GRPO's tests reward gave
the always-equal object 0.75 where an honest wrong answer gets 0, the coding environment 0.67.
"""

from __future__ import annotations

import json

import anyio
import pytest
from support.rewardhacks import HACKS, HONEST, HONEST_REWARD, PROBLEMS, REWARD_FILES

from mcp_server.evals.kit import testreward, verdict
from mcp_server.evals.kit.coding_env import CodingEnv
from mcp_server.evals.kit.problems import Problem, fenced
from mcp_server.evals.kit.sandbox import Limits, Sandbox

LIMITS = Limits(timeout_s=5)


@pytest.fixture(scope="module")
def box():
    with Sandbox("auto", workers=2, limits=LIMITS) as sandbox:
        CodingEnv.box, CodingEnv.timeout_s = sandbox, 5.0
        yield sandbox


def _problem(row: dict) -> Problem:
    return Problem(id=row["id"], benchmark="mbpp", text=row["prompt"], tests="\n".join(row["tests"]),
                   setup=row["setup"])


def _inspect_scorer(box, row: dict, answer: str) -> float:
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    from mcp_server.evals.kit.tasks import passes_tests

    state = TaskState(model="mockllm/model", sample_id=row["id"], epoch=1, input="", messages=[],
                      output=ModelOutput.from_content("mockllm/model", answer),
                      metadata={"problem": _problem(row).to_dict()})
    return 1.0 if anyio.run(passes_tests(box, LIMITS), state, Target("")).value == "C" else 0.0


def _env_reward(row: dict, code: str) -> float:
    env = CodingEnv()
    env.reset(prompt=row["prompt"], visible_tests=row["tests"][:1], hidden_tests=row["tests"], id=row["id"],
              setup=row["setup"])
    env.run_python(code)
    return env.get_reward()


def _agent_rewards(rows: list[dict], code: str) -> list[float]:
    """mbpp-agent's loop with a scripted model (Qwen3's call syntax) that runs ``code``, then answers."""
    from mcp_server.evals.kit.agent_loop import run_episodes

    call = json.dumps({"name": "run_python", "arguments": {"code": code}})

    def complete(batch, budgets):
        return [f"<tool_call>\n{call}\n</tool_call><|im_end|>" if len(messages) == 1 else "Done.<|im_end|>"
                for messages, _tools in batch]

    agent_rows = [{"id": r["id"], "prompt": r["prompt"], "visible_tests": r["tests"][:1], "hidden_tests": r["tests"],
                   "setup": r["setup"]} for r in rows]
    return [e["reward"] for e in run_episodes(complete, agent_rows, "hermes", max_turns=3, max_tokens=100_000)]


SCORERS = {
    "eval (verdict.score)": lambda box, row, code: float(
        verdict.score(box, _problem(row), fenced(code), LIMITS).passed),
    "eval (Inspect scorer)": lambda box, row, code: _inspect_scorer(box, row, fenced(code)),
    "GRPO tests reward": lambda box, row, code: testreward.tests_fraction(box, row, fenced(code)),
    "coding environment": lambda box, row, code: _env_reward(row, code),
}


@pytest.mark.parametrize("scorer", list(SCORERS))
def test_the_honest_answer_scores_full_marks(box, scorer):
    assert [SCORERS[scorer](box, row, HONEST) for row in PROBLEMS] == [1.0] * len(PROBLEMS)


@pytest.mark.parametrize("scorer", list(SCORERS))
@pytest.mark.parametrize("hack", list(HACKS))
def test_a_reward_hack_scores_nothing(box, scorer, hack):
    scores = {row["id"]: SCORERS[scorer](box, row, HACKS[hack]) for row in PROBLEMS}
    assert all(s <= 0.0 for s in scores.values()), scores


def test_mbpp_agent_gives_the_honest_session_full_marks_and_every_hack_nothing(box):
    assert _agent_rewards(PROBLEMS, HONEST) == [1.0] * len(PROBLEMS)
    rewards = {hack: _agent_rewards(PROBLEMS, code) for hack, code in HACKS.items()}
    assert {hack: r for hack, r in rewards.items() if any(x > 0 for x in r)} == {}


@pytest.mark.parametrize("case", list(REWARD_FILES))
def test_a_reward_file_scores_only_a_plain_finite_number(box, case):
    row = {"id": "r/1", "prompt": "p", "tests": []}
    value, why = testreward.file_reward(box, REWARD_FILES[case], "def f():\n    return 1", row)
    assert value == 0.0 and why, (value, why)
    assert testreward.file_reward(box, HONEST_REWARD, "def f():\n    return 1", row) == (0.75, None)


def test_an_expected_side_that_is_not_a_literal_is_evaluated_without_the_answer(box):
    trial = verdict.trial_for(_problem(PROBLEMS[0]), fenced(HONEST))
    reference = trial.reference_payload()
    assert reference is not None and reference["module"] == "" and reference["probes"] == ["math.factorial(3)"]
    assert [e.pair for e in trial.expect] == [False, False, False, True]
    assert trial.payload["answer_names"] == ["fact"] and "math" in trial.payload["preload"]
    resolved = verdict.with_references(trial, lambda payload, nonce: box.run_trial(payload, nonce, LIMITS))
    assert resolved.expect[0].expected == 6 and type(resolved.expect[0].expected) is int
