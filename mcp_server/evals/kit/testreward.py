"""GRPO's tests reward: the share of a row's scored asserts an answer passes, each one a trial judged outside
the answer's process (verdict.py: the parent compares the values, so an answer that edits or replaces its tests
gains nothing). Used by the GRPO script (which embeds the kit) and by the host's ceiling check.

    box = Sandbox("auto", workers=4).start()
    tests_fraction(box, {"id": "mbpp/601", "prompt": "...", "tests": ["assert f(1) == 2"], "setup": ""}, answer)
"""

from __future__ import annotations

from .problems import Problem
from .sandbox import Limits
from .verdict import judge, new_nonce, trial_for


def tests_fraction(box, row: dict, answer: str, timeout_s: float = 5.0) -> float:
    tests = row.get("tests") or []
    passed = 0
    for k, test in enumerate(tests):
        problem = Problem(id=f"{row.get('id')}:{k}", benchmark="mbpp", text=row.get("prompt") or "", tests=test,
                          setup=row.get("setup") or "")
        trial, nonce = trial_for(problem, answer), new_nonce()
        passed += judge(trial, nonce, box.run_trial(trial.payload, nonce, Limits(timeout_s=timeout_s))).passed
    return passed / len(tests) if tests else 0.0
