"""Pass or fail, decided outside the answer's process wherever the tests allow.

    verdict = score(box, problem, answer)            # run it in a started Sandbox and judge: Verdict(passed, ...)
    trial = trial_for(problem, answer)               # what the sandbox runs (payload) + what only we keep (expect)
    verdict = judge(trial, nonce, result)            # from the sandbox's ExecResult
    verdict = judge_stdout(trial, nonce, code, out)  # docker mode: the result line is the last line of stdout

Nothing inside the answer's own process can be trusted to say "passed", so:

- **values** — a test line ``assert EXPR OP EXPECTED`` (MBPP's ``assert f(x) == y``, most HumanEval checks) is
  split: the sandbox evaluates EXPR and sends its value back, encoded by exact type; the expected value is
  evaluated here from the benchmark's literal and never enters the sandbox; the comparison happens here.
  An expected side that is not a literal (``== math.factorial(3)``) but names nothing of the answer is evaluated
  in a sandboxed program of its own that never loads the answer (``reference_payload``), its plain value sent
  back the same way; where both sides name the answer, both values come back and are compared here.
  ``assert EXPR`` / ``assert not EXPR`` are judged here from EXPR's value; where EXPR is more than a call of the
  answer (``math.isclose(f(x), y)``) its truth is computed inside (``decided == "inside"``), on plain values only.
- every name of the answer that the tests use is wrapped (a function returns plain values only, of exact
  built-in type, read through the base type's own methods) or copied as a plain value, so no object with a
  forged ``__eq__``, ``__sub__`` or ``__class__`` reaches a test; the tests' imports are loaded before the answer
  runs, so an answer that patches them (``math.isclose = …``) fails, and so does one that rebinds a name of the
  tests' namespace or their builtins while it runs.
- **proof** — tests that are not a list of asserts (loops, helper variables; 7 of HumanEval's 164) run inside,
  and the only evidence is that they ran to their end: a fresh random nonce, never in the program text, sent
  with the request and written by the harness after the last statement returned.

Either way the run passes only with exit status 0 AND exactly one result line on the result channel, carrying
this run's nonce, AND nothing after it. The answer sees the tests' function wrapped so it returns plain values
(no object with a forged ``__eq__``), its tests run in their own namespace with a copy of the builtins, and
an answer that replaces a module's callable, ``sys.modules`` entries or installs a trace hook fails.

Residual: an answer that reads its own process memory (frames, ``gc``, ctypes) can find the nonce and write a
result line itself. In the values form that line must also carry the expected values, which only the parent
holds (MBPP shows its three test lines in the prompt, so an answer can hard-code those outputs — memorising,
which the tests themselves cannot tell from solving). Every scorer calls ``score`` (or ``with_references`` + ``judge``).
"""

from __future__ import annotations

import hashlib
import json
import operator
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .problems import Problem
from .trials import (  # noqa: F401 - the trial's names, where scorers and tests have always found them
    BUILTIN_NAMES,
    COMPARE,
    MAX_LITERAL,
    NO_VALUE,
    Expectation,
    Opaque,
    Trial,
    _opaque_in,
    _split_check,
    _split_mbpp,
    literal,
    trial_for,
)

if TYPE_CHECKING:
    from .sandbox import ExecResult, Limits, Sandbox

APPLY = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
         "ge": operator.ge, "in": lambda a, b: a in b, "not_in": lambda a, b: a not in b,
         "is": operator.is_, "is_not": operator.is_not}


@dataclass(frozen=True)
class Verdict:
    passed: bool
    status: str  # passed | failed | timeout | oom | killed
    reason: str
    decided: str  # values | inside | proof

# ---------------------------------------------------------------------------------------------
# Judging
# ---------------------------------------------------------------------------------------------

def decode(data: Any, depth: int = 0) -> Any:
    """The value back from ``harness.encode``'s form; ValueError for anything malformed."""
    if depth > 80 or not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise ValueError("malformed value")
    tag, rest = data[0], data[1:]
    scalar = {"N": lambda: None, "b": lambda: _typed(rest[0], bool), "i": lambda: int(_typed(rest[0], str), 16),
              "f": lambda: float.fromhex(_typed(rest[0], str)), "s": lambda: _typed(rest[0], str),
              "y": lambda: bytes.fromhex(_typed(rest[0], str)), "?": lambda: Opaque(str(rest[0])[:80]),
              "c": lambda: complex(float.fromhex(_typed(rest[0], str)), float.fromhex(_typed(rest[1], str)))}
    if tag in scalar:
        return scalar[tag]()
    items = _typed(rest[0], list)
    if tag == "d":
        return {decode(_typed(k, list)[0], depth + 1): decode(_typed(k, list)[1], depth + 1) for k in items}
    kinds = {"l": list, "t": tuple, "S": set, "F": frozenset}
    if tag not in kinds:
        raise ValueError(f"unknown value tag {tag!r}")
    return kinds[tag](decode(x, depth + 1) for x in items)


def _typed(value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise ValueError("malformed value")
    return value


def holds(exp: Expectation, value: Any) -> bool:
    """Does the value the sandbox computed meet the expectation (False for anything only named)?"""
    if _opaque_in(value):
        return False
    try:
        if exp.op == "truthy":
            return bool(value)
        if exp.op == "falsy":
            return not value
        if exp.pair:
            if type(value) is not tuple or len(value) != 2:
                return False
            return bool(APPLY[exp.op](value[0], value[1]))
        left, right = (exp.expected, value) if exp.swapped else (value, exp.expected)
        return bool(APPLY[exp.op](left, right))
    except Exception:  # noqa: BLE001 - a comparison that raises fails, as the assert would
        return False


def _fail(reason: str, trial: Trial, status: str = "failed") -> Verdict:
    return Verdict(False, status, reason, trial.decided)


def _result_line(channel: str, nonce: str) -> dict | str:
    """The parsed result, or why the channel does not hold exactly one line with this run's nonce."""
    if not channel:
        return "no result line: the tests did not run to their end (the process exited or was ended early)"
    if not channel.endswith("\n") or channel.count("\n") != 1:
        return "the result channel holds more than the one result line (forged or extra output)"
    head, _, body = channel[:-1].partition(" ")
    if not secrets.compare_digest(head.encode(), nonce.encode()):
        return "the result line does not carry this run's nonce (forged)"
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return "the result line is not valid JSON"
    if not isinstance(data, dict):
        return "the result line is not a result"
    return data


def judge_channel(trial: Trial, nonce: str, exit_code: int | None, channel: str) -> Verdict:
    data = _result_line(channel, nonce)
    if isinstance(data, str):
        return _fail(data, trial)
    if data.get("error"):
        return _fail(str(data["error"])[:300], trial)
    values = data.get("probes")
    if not isinstance(values, list) or len(values) > len(trial.expect):
        return _fail("the result line does not match the tests", trial)
    for i, (raw, exp) in enumerate(zip(values, trial.expect, strict=False), 1):
        if isinstance(raw, dict):
            return _fail(f"test line {i} raised {str(raw.get('raised'))[:200]}", trial)
        try:
            value = decode(raw)
        except (ValueError, TypeError, IndexError, OverflowError, RecursionError):
            return _fail(f"test line {i}: malformed value", trial)
        if not holds(exp, value):
            return _fail(f"test line {i}: got {_short(value)}", trial)
    if len(values) < len(trial.expect):
        return _fail(f"only {len(values)} of {len(trial.expect)} test lines ran", trial)
    if trial.payload["tests"] and data.get("tests") != "ok":
        return _fail(f"the tests raised {str(data.get('tests'))[:200]}", trial)
    if exit_code != 0:
        return _fail(f"exit status {exit_code} after the tests", trial)
    return Verdict(True, "passed", "every test ran to its end and held", trial.decided)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def judge(trial: Trial, nonce: str, result: ExecResult) -> Verdict:
    """The verdict of a sandbox run (``Sandbox.run_trial``)."""
    if result.status in ("timeout", "oom", "killed"):
        return _fail(f"the program was stopped ({result.status})", trial, result.status)
    if result.channel_truncated:
        return _fail("the result line is larger than the result channel allows", trial)
    return judge_channel(trial, nonce, result.exit_code, result.channel)


def judge_stdout(trial: Trial, nonce: str, exit_code: int | None, stdout: str) -> Verdict:
    """The verdict when the result line is the last line of stdout (docker mode): it must be the last line, and
    the only one carrying the nonce."""
    if not stdout.endswith("\n"):
        return _fail("no result line at the end of the output", trial)
    lines = stdout[:-1].split("\n")
    if sum(line.startswith(nonce) for line in lines) != 1:
        return _fail("the nonce appears on more than one line, or on none", trial)
    return judge_channel(trial, nonce, exit_code, lines[-1] + "\n")


def new_nonce() -> str:
    return secrets.token_hex(16)


def score(box: Sandbox, problem: Problem, answer: str, limits: Limits | None = None) -> Verdict:
    """Run ``answer`` against ``problem``'s tests in ``box`` and judge it: what every scorer calls (the evals,
    GRPO's tests reward, the coding environment and so mbpp-agent)."""
    trial = with_references(trial_for(problem, answer), lambda payload, nonce: box.run_trial(payload, nonce, limits))
    nonce = new_nonce()
    return judge(trial, nonce, box.run_trial(trial.payload, nonce, limits))


_REFERENCES: dict[str, list] = {}
_REFERENCES_LOCK = threading.Lock()
MAX_REFERENCES = 4096


def with_references(trial: Trial, run: Callable[[dict, str], Any]) -> Trial:
    """``trial`` with the expected sides that are not literals evaluated by ``run(payload, nonce)`` (the
    sandbox's ``run_trial``, which returns an ``ExecResult``; or anything with ``.channel``) in a program that
    never loads the answer. The values depend on the problem alone, so they are kept per problem."""
    payload = trial.reference_payload()
    if payload is None:
        return trial
    key = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
    with _REFERENCES_LOCK:
        known = _REFERENCES.get(key)
    if known is None:
        nonce = new_nonce()
        result = run(payload, nonce)
        known = reference_values(trial, nonce, getattr(result, "channel", "") or "")
        if getattr(result, "status", "passed") not in ("timeout", "oom", "killed"):
            with _REFERENCES_LOCK:
                if len(_REFERENCES) >= MAX_REFERENCES:
                    _REFERENCES.pop(next(iter(_REFERENCES)))
                _REFERENCES[key] = known
    return trial.resolved(list(known))


def reference_values(trial: Trial, nonce: str, channel: str) -> list:
    """The reference run's values, one per non-literal expected side (``NO_VALUE`` for one that raised, did not
    run or came back malformed)."""
    wanted = sum(e.reference is not None for e in trial.expect)
    data = _result_line(channel, nonce)
    raw = data.get("probes") if isinstance(data, dict) and not data.get("error") else None
    values: list = []
    for item in (raw if isinstance(raw, list) else [])[:wanted]:
        if isinstance(item, dict):
            break
        try:
            values.append(decode(item))
        except (ValueError, TypeError, IndexError, OverflowError, RecursionError):
            values.append(NO_VALUE)
    return values + [NO_VALUE] * (wanted - len(values))
