"""Inspect AI tasks for HumanEval, MBPP and a user's own JSONL problems, scored in the sandbox.

    from inspect_ai import eval
    task = code_task(load_problems("humaneval", limit=5), sandbox=box, samples=1)
    eval(task, model="hf/local", model_args={"model_path": ADAPTER_DIR, "device": "cpu"})

One sample per problem (``epochs = samples``, scores reduced by mean, so the task's accuracy is the
pass@1 estimate). The scorer extracts the first fenced code block of the answer, builds the trial
with ``verdict.trial_for`` and runs it in the ``Sandbox`` (or, in ``docker`` mode, the same harness
in Inspect's own docker sandbox); ``verdict.judge`` decides, outside the answer's process: exit 0
is not enough (see verdict.py). The score's explanation carries the status (passed, failed,
timeout, oom, killed), the reason and the tail of the program's output.
"""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate

from .errors import KitError
from .problems import Problem, user_prompt
from .sandbox import Limits, Sandbox
from .verdict import Verdict, judge, judge_stdout, new_nonce, reference_values, trial_for, with_references

DOCKER = "docker"


def _samples(problems: list[Problem]) -> MemoryDataset:
    return MemoryDataset([
        Sample(id=p.id, input=user_prompt(p), target=p.solution or "", metadata={"problem": p.to_dict()})
        for p in problems
    ])


HARNESS = Path(__file__).with_name("harness.py")


async def _in_docker(trial, nonce: str, limits: Limits | None) -> tuple[Verdict, str]:
    """docker: the same harness in Inspect's sandbox environment, the result line as the last line of stdout."""
    from inspect_ai.util import sandbox as inspect_sandbox

    lim = limits or Limits()

    async def run(payload: dict, nonce: str):
        return await inspect_sandbox().exec(["python", "-c", HARNESS.read_text(encoding="utf-8")],
                                            input=json.dumps({**payload, "nonce": nonce}), timeout=int(lim.timeout_s))

    try:
        reference = trial.reference_payload()
        if reference is not None:  # the expected sides that are not literals, in a program without the answer
            ref_nonce = new_nonce()
            ref = await run(reference, ref_nonce)
            last = ref.stdout.rstrip("\n").rsplit("\n", 1)[-1] + "\n" if ref.stdout.endswith("\n") else ""
            trial = trial.resolved(reference_values(trial, ref_nonce, last))
        res = await run(trial.payload, nonce)
    except TimeoutError:
        return Verdict(False, "timeout", "the program was stopped (timeout)", trial.decided), ""
    return judge_stdout(trial, nonce, res.returncode, res.stdout), res.stdout + res.stderr


@scorer(metrics=[accuracy(), stderr()])
def passes_tests(sandbox: Sandbox | None, limits: Limits | None = None):
    """CORRECT when every test of the answer ran to its end and held, judged outside the answer's process."""

    async def score(state: TaskState, target: Target) -> Score:
        problem = Problem(**state.metadata["problem"])
        trial, nonce = trial_for(problem, state.output.completion), new_nonce()
        if sandbox is None:
            verdict, output = await _in_docker(trial, nonce, limits)
        else:
            import anyio

            box = sandbox
            trial = await anyio.to_thread.run_sync(
                lambda: with_references(trial, lambda payload, n: box.run_trial(payload, n, limits)))
            result = await anyio.to_thread.run_sync(box.run_trial, trial.payload, nonce, limits)
            verdict, output = judge(trial, nonce, result), result.output
        return Score(
            value=CORRECT if verdict.passed else INCORRECT,
            answer=trial.payload["module"][-2000:],
            explanation=f"{verdict.status}: {verdict.reason}\n{output[-600:]}",
            metadata={"status": verdict.status, "reason": verdict.reason, "decided": verdict.decided},
        )

    return score


def code_task(
    problems: list[Problem],
    sandbox: Sandbox | str,
    samples: int = 1,
    temperature: float = 0.0,
    max_tokens: int = 512,
    name: str | None = None,
    limits: Limits | None = None,
) -> Task:
    """``sandbox`` is a started ``Sandbox`` or the string 'docker'."""
    if isinstance(sandbox, str) and sandbox != DOCKER:
        raise KitError(f"Unknown sandbox '{sandbox}'.", f"pass a started Sandbox or '{DOCKER}'.")
    docker = sandbox == DOCKER
    box = sandbox if isinstance(sandbox, Sandbox) else None  # None: Inspect's docker sandbox
    config = GenerateConfig(max_tokens=max_tokens, temperature=temperature if temperature > 0 else None)
    return Task(
        dataset=_samples(problems),
        solver=generate(),
        scorer=passes_tests(box, limits),
        epochs=Epochs(samples, "mean"),
        config=config,
        sandbox=DOCKER if docker else None,
        name=name or (problems[0].benchmark if problems else "code"),
    )
