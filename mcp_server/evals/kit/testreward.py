"""GRPO's rewards that run code, each program in the kit's sandbox (no network, no token, an empty environment):

- ``tests_fraction``: the share of a row's scored asserts an answer passes, each one a trial judged outside the
  answer's process (verdict.py: the parent compares the values, so an answer that edits or replaces its tests
  gains nothing);
- ``file_reward``: a user's reward file (``reward(completion, row) -> float``) called on one completion in a
  program of its own; the number comes back as the trial's probe value, read by the parent. Only the reward's
  return value counts, never anything the program prints.

Used by the GRPO script (which embeds the kit) and by the host's ceiling check.

    box = Sandbox("auto", workers=4).start()
    tests_fraction(box, {"id": "mbpp/601", "prompt": "...", "tests": ["assert f(1) == 2"], "setup": ""}, answer)
    file_reward(box, open("blocks.py").read(), completion, row)     # (score, error or None)
"""

from __future__ import annotations

import math

from .problems import Problem
from .sandbox import Limits
from .verdict import _result_line, decode, new_nonce, score


def tests_fraction(box, row: dict, answer: str, timeout_s: float = 5.0) -> float:
    tests = row.get("tests") or []
    passed = 0
    for k, test in enumerate(tests):
        problem = Problem(id=f"{row.get('id')}:{k}", benchmark="mbpp", text=row.get("prompt") or "", tests=test,
                          setup=row.get("setup") or "")
        passed += score(box, problem, answer, Limits(timeout_s=timeout_s)).passed
    return passed / len(tests) if tests else 0.0


def file_reward(box, source: str, completion: str, row: dict, timeout_s: float = 5.0) -> tuple[float, str | None]:
    """(score, None), or (0.0, why) when the reward raised, timed out or returned no finite number."""
    payload = {"module": source, "namespace": "shared", "trusted": "", "entry_point": None,
               "probes": [f"reward({completion!r}, {_plain_row(row)!r})"], "tests": ""}
    nonce = new_nonce()
    result = box.run_trial(payload, nonce, Limits(timeout_s=timeout_s))
    if result.status in ("timeout", "oom", "killed"):
        return 0.0, f"the reward was stopped ({result.status})"
    data = _result_line(result.channel, nonce)
    if isinstance(data, str):
        return 0.0, data
    if data.get("error"):
        return 0.0, str(data["error"])[:300]
    probes = data.get("probes") or []
    if not probes or isinstance(probes[0], dict):
        return 0.0, f"reward() raised {str((probes[0] if probes else {}).get('raised'))[:300]}"
    try:
        value = decode(probes[0])
    except (ValueError, TypeError, IndexError, OverflowError, RecursionError):
        return 0.0, "reward() returned a malformed value"
    if type(value) not in (int, float, bool) or not math.isfinite(value):
        return 0.0, f"reward() returned {type(value).__name__} {str(value)[:40]}, not a finite number"
    return float(value), None


def _plain_row(row: dict) -> dict:
    """The row's JSON values only (what a reward may read: id, prompt, tests, solution, ...)."""
    return {k: v for k, v in row.items() if isinstance(v, (str, int, float, bool, list, dict, type(None)))}
