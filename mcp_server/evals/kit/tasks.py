"""Inspect AI tasks for HumanEval, MBPP and a user's own JSONL problems, scored in the sandbox.

    from inspect_ai import eval
    task = code_task(load_problems("humaneval", limit=5), sandbox=box, samples=1)
    eval(task, model="hf/local", model_args={"model_path": ADAPTER_DIR, "device": "cpu"})

One sample per problem (``epochs = samples``, scores reduced by mean, so the task's accuracy is the
pass@1 estimate). The scorer extracts the first fenced code block of the answer, builds the
program with ``problems.program_for`` and runs it in the ``Sandbox`` (or, in ``docker`` mode,
in Inspect's own docker sandbox). The score's explanation carries the sandbox status (passed,
failed, timeout, oom, killed) and the tail of the program's output.
"""

from __future__ import annotations

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate

from .errors import KitError
from .problems import Problem, program_for, user_prompt
from .sandbox import Limits, Sandbox

DOCKER = "docker"


def _samples(problems: list[Problem]) -> MemoryDataset:
    return MemoryDataset([
        Sample(id=p.id, input=user_prompt(p), target=p.solution or "", metadata={"problem": p.to_dict()})
        for p in problems
    ])


@scorer(metrics=[accuracy(), stderr()])
def passes_tests(sandbox: Sandbox | None, limits: Limits | None = None):
    """CORRECT when the answer's program exits 0 in the sandbox."""

    async def score(state: TaskState, target: Target) -> Score:
        problem = Problem(**state.metadata["problem"])
        program = program_for(problem, state.output.completion)
        if sandbox is None:  # docker: Inspect's sandbox environment for this sample
            from inspect_ai.util import sandbox as inspect_sandbox

            lim = limits or Limits()
            try:
                res = await inspect_sandbox().exec(["python", "-c", program], timeout=int(lim.timeout_s))
                status, output = ("passed" if res.success else "failed"), (res.stdout + res.stderr)
            except TimeoutError:
                status, output = "timeout", ""
        else:
            import anyio

            result = await anyio.to_thread.run_sync(sandbox.run, program, limits)
            status, output = result.status, result.output
        return Score(
            value=CORRECT if status == "passed" else INCORRECT,
            answer=program[-2000:],
            explanation=f"{status}: {output[-600:]}",
            metadata={"status": status},
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
