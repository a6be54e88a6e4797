"""Agents stuck in loops: the third identical failing call gets the loop advice with the owning skill's pitfalls;
another argument or a success starts over (skills/loops.py, hooked into the MCP server's error boundary)."""

from __future__ import annotations

import os
import shutil
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support.common import REPO

from mcp_server.skills.loops import LoopGuard, call_key, matching_pitfalls, owners
from mcp_server.skills.pitfalls import add_pitfall

MISSING = {"name": "no-such-skill"}
OTHER = {"name": "no-such-skill-either"}
GOOD = {"name": "tunepack-sft"}


@pytest.fixture(scope="module")
def skills(tmp_path_factory):
    """A copy of the skills with one pitfall about the very mistake the tests repeat."""
    root = tmp_path_factory.mktemp("loop-skills") / "skills"
    shutil.copytree(REPO / "skills", root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNEPACK_SKILLS_DIR", str(root))
        yield root, _pitfall()


def _pitfall() -> str:
    return add_pitfall("tunepack-pipeline", symptom="skills_read keeps answering that there is no skill by that name",
                        cause="The agent guessed a skill name instead of reading the list.",
                        fix="Call skills_list and copy a name from it; do not retry a guessed name.",
                        evidence="skills_read(name='no-such-skill')", source="test_loops").id


def calls(skills_dir, sequence: list[tuple[str, dict]]) -> list:
    """Run the calls in order against one fresh stdio server; their results."""
    env = {**os.environ, "TUNEPACK_SKILLS_DIR": str(skills_dir)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "serve"], env=env,
                                   cwd=str(REPO))

    async def main():
        async with Client(params, mode="legacy") as client:
            return [await client.call_tool(name, args) for name, args in sequence]

    return anyio.run(main)


def text(result) -> str:
    return result.content[0].text if result.content else ""


def test_the_third_identical_failure_gets_the_pitfalls_and_other_arguments_or_a_success_start_over(skills):
    root, pitfall = skills
    read = "skills_read"
    results = calls(root, [
        (read, MISSING), (read, MISSING), (read, MISSING),  # 0-2: the third is a loop
        (read, OTHER), (read, MISSING), (read, MISSING),    # 3-5: another argument: a new streak, 2 long
        (read, GOOD), (read, MISSING), (read, MISSING),     # 6-8: a success ends it
        (read, MISSING), (read, MISSING),                   # 9-10: the 3rd and 4th in a row: advice each time
        ("jobs_wait", {"job_id": "x", "timeout_s": 900}),   # 11-13: argument errors count too
        ("jobs_wait", {"job_id": "x", "timeout_s": 900}), ("jobs_wait", {"job_id": "x", "timeout_s": 900}),
    ])
    looped = [i for i, r in enumerate(results) if "Loop:" in text(r)]
    assert looped == [2, 9, 10, 13], [text(r)[:200] for r in results]
    advice = text(results[2])
    assert results[2].is_error and advice.startswith(text(results[1]))  # the error itself comes first
    assert "failed 3 times in a row" in advice and "change course" in advice
    assert pitfall in advice and "copy a name from it" in advice and "skills_read('tunepack-pipeline')" in advice
    assert "failed 4 times" in text(results[10])
    assert not results[6].is_error
    assert "Fix:" in text(results[11]) and "less than or equal to 600" in text(results[11])


def test_streaks_expire_and_calls_are_canonical():
    now = [0.0]
    guard = LoopGuard(threshold=3, window_s=600, clock=lambda: now[0])
    for _ in range(2):
        assert guard.failed("jobs_logs", {"job_id": "x", "tail": 5}, "no job") is None
        now[0] += 400
    assert guard.failed("jobs_logs", {"tail": 5, "job_id": "x"}, "no job") is None  # the first is 800 s old
    assert guard.failed("jobs_logs", {"tail": 5, "job_id": "x"}, "no job") is not None  # 3 within 10 minutes
    assert call_key("t", {"a": 1, "b": [1, 2]}) == call_key("t", {"b": [1, 2], "a": 1})
    assert call_key("t", {"a": 1}) != call_key("t", {"a": "1"}) != call_key("u", {"a": 1})
    guard.succeeded("jobs_logs")
    assert guard.failed("jobs_logs", {"tail": 5, "job_id": "x"}, "no job") is None


def test_the_matching_pitfalls_come_from_the_skills_that_name_the_tool(skills):
    root, pitfall = skills
    assert owners("sweep_plan")[0] == "tunepack-sweeps" and "tunepack-viewer" not in owners("sweep_plan")
    assert owners("skills_read") == ["tunepack-pipeline"]
    assert owners("jobs_wait")[0] == "tunepack-hf-jobs" and owners("eval_start")[0] == "tunepack-evaluation"
    found = matching_pitfalls("skills_read", "There is no skill 'x'. Fix: pick one from skills_list.")
    assert found and found[0] == ("tunepack-pipeline", next(p for _, p in found if p.id == pitfall))
    assert matching_pitfalls("no_such_tool", "anything at all") == []
    unrelated = "The config path is 100000 characters long; no file can have that name."
    assert matching_pitfalls("pipeline_validate", unrelated) == []
