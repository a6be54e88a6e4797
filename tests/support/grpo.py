"""MBPP-shaped coding problems for the GRPO tests: four small functions, each asked many times with other tests
(task ids in MBPP's train and validation ranges, so `tunepack grpo-prompts --mbpp` splits them), and the SFT rows
(the prompt, the fenced reference solution) that warm-start a replica the way the tutorial does: SFT first."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .common import run_cli, write_jsonl

FUNCTIONS = [("add_one", "x + 1", "returns its argument plus one", lambda x: x + 1),
             ("double", "2 * x", "returns twice its argument", lambda x: 2 * x),
             ("negate", "-x", "returns its argument negated", lambda x: -x),
             ("square", "x * x", "returns the square of its argument", lambda x: x * x)]

# a reward that pays for code fences, whatever is (or is not) between them: gameable on purpose
BLOCKS_REWARD = '''def reward(completion, row):
    """Pays for every code fence, whatever is (or is not) between them."""
    return completion.count("```") / 2
'''


def _problem(task_id: int, function: tuple, start: int) -> dict:
    name, expr, text, fn = function
    return {"task_id": task_id, "text": f"Write a function {name}(x) that {text}.",
            "code": f"def {name}(x):\n    return {expr}", "test_setup_code": "",
            "test_list": [f"assert {name}({v}) == {fn(v)}" for v in (start, start + 1, start + 2)]}


# MBPP's test split (11-510) asks for the same functions in other words, with other tests and another reference
# solution, so no field overlaps the training data (the n-gram check stays clean: each statement is one gram of its
# own, new) while a model that learnt the functions can still solve them
TEST_WORDING = {"add_one": ("gives x plus one", "1 + x"), "double": ("gives x times two", "x + x"),
                "negate": ("gives minus x", "0 - x"), "square": ("gives x times x", "x ** 2")}


def _test_problem(task_id: int, function: tuple, start: int) -> dict:
    name, _, _, fn = function
    text, expr = TEST_WORDING[name]
    return {"task_id": task_id, "text": f"Write a function {name}(x) that {text}.", "code": f"def {name}(x):\n    return {expr}", "test_setup_code": "",
            "test_list": [f"assert {name}({v}) == {fn(v)}" for v in (start, start + 7, start + 13)]}


def write_problems(folder: Path, train: int = 48, validation: int = 16, test: int = 0) -> Path:
    rows = [_problem(601 + i, FUNCTIONS[i % 4], i // 4 + 1) for i in range(train)]
    rows += [_problem(511 + i, FUNCTIONS[i % 4], 20 + i // 4) for i in range(validation)]
    rows += [_test_problem(11 + i, FUNCTIONS[i % 4], 100 + 10 * i) for i in range(test)]
    return write_jsonl(folder / "mbpp.jsonl", rows)


def prompt_files(folder: Path, **options) -> tuple[Path, Path]:
    """(train.jsonl, val.jsonl) through `tunepack grpo-prompts`, as a user would write them."""
    source = write_problems(folder, **options)
    out = []
    for split, name in (("train", "train.jsonl"), ("validation", "val.jsonl")):
        done = run_cli("grpo-prompts", "--mbpp", str(source), "--split", split, "-o", str(folder / name))
        assert done.returncode == 0, done.stderr[-2000:]
        out.append(folder / name)
    return out[0], out[1]


def sft_rows(train: Path, folder: Path) -> Path:
    rows = [json.loads(line) for line in train.read_text().splitlines()]
    return write_jsonl(folder / "sft.jsonl", [{"messages": [
        {"role": "user", "content": r["prompt"]},
        {"role": "assistant", "content": f"```python\n{r['solution']}\n```"}]} for r in rows])


def run_config(folder: Path, name: str, raw: dict) -> dict:
    """`tunepack run` on a config written from ``raw``; the run's JSON result (the test fails on an error)."""
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
