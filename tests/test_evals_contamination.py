"""The contamination check flags planted overlap and passes clean data."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mcp_server.evals.kit.contamination import check_contamination, grams, iter_training_texts, tokens
from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.problems import fenced, load_problems, user_prompt

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "tests" / "fixtures" / "evals" / "mbpp_mini.jsonl"


def chat_row(user: str, assistant: str) -> dict:
    return {"messages": [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]}


def test_normalisation_ignores_whitespace_and_case():
    assert tokens("def  f(x):\n\treturn X") == tokens("DEF f( x ):  return x")
    assert grams("a b c", 13) == set()  # too short to be a gram at all
    assert len(grams(" ".join(f"w{i}" for i in range(20)), 13)) == 8


def test_clean_agent_traces_do_not_overlap_humaneval():
    texts = iter_training_texts([str(REPO / "examples" / "data" / "agent_traces.jsonl")])
    report = check_contamination(load_problems("humaneval"), texts)
    assert report.n_problems == 164 and report.contaminated_ids == [] and report.rows_scanned == 48


def test_planted_humaneval_solutions_are_flagged(tmp_path):
    problems = load_problems("humaneval")
    planted = [problems[5], problems[77]]
    rows = [chat_row("help me", "Here you go:\n" + p.text + p.solution) for p in planted]
    rows += [chat_row("what is 2+2?", "4")] * 10
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = check_contamination(problems, iter_training_texts([str(data)]))
    assert report.contaminated_ids == ["HumanEval/5", "HumanEval/77"]
    assert report.share == pytest.approx(2 / 164)
    assert report.to_dict()["contaminated"] == 2


def test_eval_format_rows_are_flagged_in_parquet_and_folders(tmp_path):
    problems = load_problems("mbpp", str(MINI))
    rows = [chat_row(user_prompt(p), fenced(p.solution)) for p in problems[:3]]
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-0.parquet")
    report = check_contamination(problems, iter_training_texts([str(folder)]))
    assert report.contaminated_ids == ["mbpp/11", "mbpp/12", "mbpp/13"]


def test_a_shared_phrase_is_not_contamination(tmp_path):
    """Boilerplate shared with a problem (one 13-gram) is below the 50 % overlap rule."""
    p = load_problems("humaneval", ids=["HumanEval/0"])[0]
    first_line = " ".join(p.text.split()[:16])
    report = check_contamination([p], [f"Unrelated text. {first_line} and then something else entirely."])
    assert report.contaminated_ids == []


def test_missing_training_files_are_named(tmp_path):
    with pytest.raises(KitError, match="does not exist"):
        list(iter_training_texts([str(tmp_path / "gone.jsonl")]))
