"""The coding environment: one programming problem in a sandboxed workspace, worked on through tools.

GRPO trains inside it (TRL's ``environment_factory``: one instance per rollout, ``reset`` per problem, the
public methods below are the tools, ``get_reward`` owns the reward), and the ``mbpp-agent`` eval runs the
same loop (``agent_loop.py``). Standard library only: the training and eval scripts embed it with the kit.

    CodingEnv.box = Sandbox("auto", workers=4).start()   # the kit's sandbox: no network, no token, no home
    env = CodingEnv()
    env.reset(prompt="...", visible_tests=["assert f(1) == 2"], hidden_tests=["assert f(2) == 3"], id="mbpp/601")
    env.run_python("def f(x):\\n    return x + 1")
    env.run_tests()                                   # the visible tests only
    env.get_reward()                                  # the hidden tests' pass rate, minus the penalties

The session: ``run_python`` keeps its state across calls — each call replays the session's earlier cells
(their output discarded) in a fresh sandboxed process, then runs the new cell, so definitions, variables and
files persist while every program stays isolated. A cell that raised stays out of the replay (its traceback
is the tool's result); a cell that runs past ``timeout_s`` returns an error result and is dropped, and the
session continues. ``write_file``/``read_file`` work on the workspace's files (text, relative paths), which
every program sees in its working directory; files a cell writes are kept too.

The reward is decided outside the model's programs (``verdict.judge`` compares the values): the hidden
tests' pass rate on the session's final program (cells + files), minus ``NO_CODE_PENALTY`` when the rollout
never ran any code (an answer written without trying it) and ``OVER_BUDGET_PENALTY`` when it kept calling
tools past its budget (every call beyond ``budget`` is refused with an error result).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from .problems import Problem
from .sandbox import Limits
from .verdict import _result_line, decode, new_nonce, score

NO_CODE_PENALTY = 0.2  # the rollout never ran code: no run_python, no run_tests
OVER_BUDGET_PENALTY = 0.1  # the rollout called tools past its budget (runaway tool calls)
MAX_FILES, MAX_FILE_BYTES, MAX_RESULT_CHARS = 32, 65_536, 2_000
# the tools in the order TRL lists an environment's public methods (by name), so every prompt renders them alike
TOOLS = ("read_file", "run_python", "run_tests", "write_file")
# what reset() adds to the task's prompt (TRL appends it to the last user message; agent_loop does the same)
ENV_NOTE = ("\n\nUse the tools: run_python (a Python session that keeps its state), run_tests (the visible test), "
            "write_file, read_file. Reply without a tool call when done: hidden tests then check your function.")

_PRELUDE = '''import contextlib as _tp_c, io as _tp_io, os as _tp_os, traceback as _tp_tb
for _tp_p, _tp_t in {files!r}.items():
    _tp_os.makedirs(_tp_os.path.dirname(_tp_p) or ".", exist_ok=True)
    with open(_tp_p, "w", encoding="utf-8") as _tp_f:
        _tp_f.write(_tp_t)
with _tp_c.redirect_stdout(_tp_io.StringIO()), _tp_c.redirect_stderr(_tp_io.StringIO()):
    for _tp_cell in {cells!r}:
        try:
            exec(compile(_tp_cell, "<cell>", "exec"), globals())
        except BaseException:
            pass
'''
_RUN = '''_tp_ok = True
try:
    exec(compile({code!r}, "<run_python>", "exec"), globals())
except BaseException:
    _tp_ok = False
    _tp_tb.print_exc(limit=-3)


def _tp_state():
    files = {{}}
    for root, _, names in _tp_os.walk("."):
        for name in names:
            path = _tp_os.path.normpath(_tp_os.path.join(root, name))
            if len(files) < {max_files} and _tp_os.path.getsize(path) <= {max_bytes}:
                try:
                    with open(path, encoding="utf-8") as handle:
                        files[path] = handle.read()
                except (UnicodeDecodeError, OSError):
                    pass
    return {{"ok": _tp_ok, "files": files}}
'''


class CodingEnv:
    """One rollout's workspace. ``box`` (class attribute) is the started sandbox every instance shares."""

    box: Any = None
    budget = 8  # tool calls per rollout
    timeout_s = 5.0  # per program

    def __init__(self) -> None:
        self._fresh()

    def _fresh(self) -> None:
        self.problem_id: str = ""
        self.visible: list[str] = []
        self.hidden: list[str] = []
        self.setup = ""
        self.cells: list[str] = []
        self.files: dict[str, str] = {}
        self.calls: dict[str, int] = dict.fromkeys(TOOLS, 0)
        self.refused = 0  # calls past the budget
        self.timeouts = 0
        self.ran_code = False
        self.reward: dict | None = None

    def reset(self, **row) -> str:
        """A new problem: the row's visible tests (``visible_tests``, or MBPP's ``visible_test``) and hidden ones
        (``hidden_tests``, or a grpo-prompts row's scored ``tests``). Returns the note on the tools that follows
        the task's prompt."""
        self._fresh()
        self.problem_id = str(row.get("id") or "")
        self.visible, self.hidden = split_tests(row)
        self.setup = row.get("setup") or ""
        return ENV_NOTE

    # --- the tools -----------------------------------------------------------------------------------

    def run_python(self, code: str) -> str:
        """Run Python code in the task's session (state persists between calls).

        Args:
            code: Python source.
        """
        refused = self._spend("run_python")
        if refused:
            return refused
        self.ran_code = True
        module = _PRELUDE.format(files=self.files, cells=self.cells) + _RUN.format(
            code=str(code), max_files=MAX_FILES, max_bytes=MAX_FILE_BYTES)
        payload = {"module": module, "namespace": "shared", "trusted": "", "entry_point": None,
                   "probes": ["_tp_state()"], "tests": ""}
        nonce = new_nonce()
        result = self.box.run_trial(payload, nonce, Limits(timeout_s=self.timeout_s))
        if result.status in ("timeout", "oom", "killed"):
            self.timeouts += result.status == "timeout"
            return (f"error: the code was stopped ({result.status}, limit {self.timeout_s:g} s); it is not part of "
                    "the session, which continues as before")
        state = _probe(result.channel, nonce)
        if state is None:
            return _clip("error: the program ended before the session could be saved (sys.exit or os._exit?); "
                         "it is not part of the session\n" + result.output)
        if state["ok"]:
            self.cells.append(str(code))
        self.files = {k: v for k, v in list(state["files"].items())[:MAX_FILES]}
        return _clip(result.output) or ("(no output)" if state["ok"] else "error")

    def write_file(self, path: str, content: str) -> str:
        """Write a text file in the workspace.

        Args:
            path: Relative path.
            content: Text.
        """
        refused = self._spend("write_file")
        if refused:
            return refused
        clean = _relative(path)
        if clean is None:
            return f"error: '{path}' is not a relative path inside the workspace"
        if len(str(content).encode("utf-8")) > MAX_FILE_BYTES or (clean not in self.files
                                                                  and len(self.files) >= MAX_FILES):
            return f"error: the workspace holds at most {MAX_FILES} files of {MAX_FILE_BYTES // 1024} KB"
        self.files[clean] = str(content)
        return f"wrote {clean} ({len(str(content))} characters)"

    def read_file(self, path: str) -> str:
        """Read a text file of the workspace.

        Args:
            path: Relative path.
        """
        refused = self._spend("read_file")
        if refused:
            return refused
        clean = _relative(path)
        if clean is None or clean not in self.files:
            return f"error: no file '{path}' (files: {', '.join(sorted(self.files)) or 'none'})"
        return _clip(self.files[clean])

    def run_tests(self) -> str:
        """Run the visible tests on the session's code."""
        refused = self._spend("run_tests")
        if refused:
            return refused
        self.ran_code = True
        if not self.visible:
            return "no visible tests for this task"
        lines = []
        for test in self.visible:
            passed, why = self._check(test)
            lines.append(f"{'PASS' if passed else 'FAIL'} {test}" + ("" if passed else f" ({why})"))
        return "\n".join(lines)

    # --- the reward -----------------------------------------------------------------------------------

    def get_reward(self) -> float:
        """The hidden tests' pass rate on the session's program, minus the penalties (recorded in ``reward``;
        computed once per episode)."""
        if self.reward is not None:
            return self.reward["reward"]
        passed = [self._check(test)[0] for test in self.hidden]
        rate = sum(passed) / len(passed) if passed else 0.0
        penalty = (0.0 if self.ran_code else NO_CODE_PENALTY) + (OVER_BUDGET_PENALTY if self.refused else 0.0)
        self.reward = {"reward": round(rate - penalty, 6), "hidden_passed": sum(passed), "hidden": len(passed),
                       "verified": bool(passed) and all(passed), "no_code_penalty": not self.ran_code,
                       "over_budget_penalty": bool(self.refused), "calls": dict(self.calls),
                       "refused": self.refused, "timeouts": self.timeouts, "reached": self.reached}
        return self.reward["reward"]

    @property
    def reached(self) -> bool:
        """Did the rollout reach the environment: at least one tool call ran (counted here, not by the trainer)."""
        return sum(self.calls.values()) > 0

    def _program(self) -> str:
        """The session as one program: its files written, then its cells in order."""
        head = f"import os as _tp_os\nfor _tp_p, _tp_t in {self.files!r}.items():\n" \
               "    _tp_os.makedirs(_tp_os.path.dirname(_tp_p) or '.', exist_ok=True)\n" \
               "    open(_tp_p, 'w', encoding='utf-8').write(_tp_t)\n" if self.files else ""
        return head + "\n".join(self.cells)

    def _check(self, test: str) -> tuple[bool, str]:
        problem = Problem(id=f"{self.problem_id}:test", benchmark="mbpp", text="", tests=test, setup=self.setup)
        verdict = score(self.box, problem, f"```python\n{self._program()}\n```", Limits(timeout_s=self.timeout_s))
        return verdict.passed, verdict.reason

    def _spend(self, tool: str) -> str | None:
        self.calls[tool] += 1
        if sum(self.calls.values()) > self.budget:
            self.refused += 1
            return f"error: the tool budget of {self.budget} calls is spent; answer now"
        return None


def split_tests(row: dict) -> tuple[list[str], list[str]]:
    """(visible, hidden) tests of a row: ``{tests, hidden_tests}`` (tests visible), a grpo-prompts MBPP row
    (``visible_test`` shown, ``tests`` scored), or ``visible_tests`` + ``hidden_tests``."""
    if row.get("hidden_tests") is not None:
        visible = row.get("visible_tests") if row.get("visible_tests") is not None else row.get("tests")
        return list(_as_list(visible)), list(_as_list(row["hidden_tests"]))
    return list(_as_list(row.get("visible_test"))), list(_as_list(row.get("tests")))


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            loaded = json.loads(value)
        except ValueError:
            return [value]
        return [str(v) for v in loaded] if isinstance(loaded, list) else [value]
    return [str(v) for v in value]


def _relative(path: str) -> str | None:
    clean = posixpath.normpath(str(path).replace("\\", "/"))
    if not clean or clean.startswith(("/", "..")) or clean == ".":
        return None
    return clean


def _probe(channel: str, nonce: str) -> dict | None:
    data = _result_line(channel, nonce)
    if isinstance(data, str) or data.get("error") or not data.get("probes"):
        return None
    try:
        state = decode(data["probes"][0])
    except (ValueError, TypeError, IndexError, RecursionError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("files"), dict):
        return None
    files = {k: v for k, v in state["files"].items() if isinstance(k, str) and isinstance(v, str) and _relative(k)}
    return {"ok": bool(state.get("ok")), "files": {_relative(k): v for k, v in files.items()}}


def _clip(text: str) -> str:
    text = text or ""
    return text if len(text) <= MAX_RESULT_CHARS else "…" + text[-MAX_RESULT_CHARS:]
