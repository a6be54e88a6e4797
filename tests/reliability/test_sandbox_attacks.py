"""Generated code against the machine it runs on and against its own score, as a hostile answer would try.

Isolation (confined mode): the attacks run inside a driver process that cannot make namespaces — the Jobs
stand-in's seccomp filter loaded into it, as an HF Jobs container is — with an HF token in its environment
(tests/support/sandbox_attacks.py). Before: the shipped `sandbox: unsafe-host` let every one of them through.

Forged scores: wrong answers that exit 0 early, raise SystemExit, use atexit, print or write fake result
lines, return objects equal to everything, patch builtins/math/the harness, or edit the tests' helpers
(tests/support/forgeries.py). Before: 14 of the 19 scored `passed` in the namespaces sandbox. They are
scored through the eval's own Inspect scorer (namespaces) and through ``verdict.score`` (confined).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import yaml
from support.forgeries import FORGERIES, HONEST
from support.sandbox_attacks import NAMES, TOKEN_PREFIX

from mcp_server.evals.kit import confine
from mcp_server.evals.kit.problems import load_problems
from mcp_server.evals.kit.sandbox import Limits, Sandbox

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
DRIVER = TESTS / "support" / "sandbox_attacks.py"


@pytest.fixture(scope="module")
def confined() -> dict:
    """One driver run: the confined sandbox (chosen by `auto`) where namespaces are blocked."""
    pytest.importorskip("pyseccomp")
    env = {**os.environ, "HF_TOKEN": TOKEN_PREFIX + secrets.token_hex(8), "PYTHONPATH": f"{REPO}{os.pathsep}{TESTS}"}
    out = subprocess.run([sys.executable, str(DRIVER), "auto"], capture_output=True, text=True, timeout=240, env=env,
                         cwd=REPO)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_without_namespaces_auto_picks_the_confined_sandbox(confined):
    assert confined["unshare"] is False and confined["namespaces_ok"] is False
    assert "unshare" in confined["namespaces_probe"]
    assert confined["mode"] == "confined" and confined["facts"]["auto"] == "confined"
    env, uid, cwd = confined["program_env"]
    assert env == {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cwd, "TMPDIR": cwd, "LANG": "C.UTF-8"}
    assert confine.UID_BASE <= uid < confine.UID_BASE + confine.UID_SLOTS


@pytest.mark.parametrize("attack", NAMES)
def test_an_attack_on_the_machine_gets_nowhere(confined, attack):
    seen = confined["attacks"][attack]
    assert not seen["got_through"], seen


@pytest.mark.parametrize("case", list(FORGERIES))
def test_a_forged_pass_fails_in_the_confined_sandbox(confined, case):
    assert not confined["forgeries"][case]["passed"], confined["forgeries"][case]


def test_processes_memory_and_time_are_capped_there(confined):
    limits = confined["limits"]
    assert int(limits["forks"]) < Limits().max_pids  # RLIMIT_NPROC of the worker's own uid (root ignores it)
    assert "MemoryError" in limits["memory"] and limits["loop"] == "timeout"
    assert limits["memfd"].strip() == "PermissionError"  # before: 640 MB held past the 512 MB cap (x 32 processes)


def test_a_program_that_fills_the_disk_is_stopped_past_its_work_folder_size(confined):
    disk = confined["limits"]["disk"]
    assert disk["status"] == "killed" and "wrote more than the work folder holds (64 MB" in disk["output"], disk
    assert disk["files"] < 199  # stopped long before its 1.6 GB (before: every file written, status passed)


def test_right_answers_still_pass_there_and_nothing_is_left_running(confined):
    assert confined["honest"] == {pid: True for pid in HONEST}
    assert confined["canonical_failed"] == [] and confined["legacy_canonical_failed"] == []
    assert confined["left_after_close"] == []


@pytest.fixture(scope="module")
def scorer():
    """The eval's own scorer over a namespaces sandbox: (problem id, answer) -> (value, metadata)."""
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    from mcp_server.evals.kit.tasks import passes_tests

    problems = {p.id: p for p in load_problems("humaneval", ids=sorted({pid for pid, _ in FORGERIES.values()}))}
    with Sandbox("namespaces", workers=2, limits=Limits(timeout_s=5)) as box:
        score = passes_tests(box)

        def run(pid: str, answer: str):
            state = TaskState(model="mockllm/model", sample_id=pid, epoch=1, input="", messages=[],
                              output=ModelOutput.from_content("mockllm/model", answer),
                              metadata={"problem": problems[pid].to_dict()})
            result = anyio.run(score, state, Target(""))
            return result.value, result.metadata

        yield run


@pytest.mark.parametrize("case", list(FORGERIES))
def test_a_forged_pass_scores_incorrect_in_the_eval(scorer, case):
    pid, answer = FORGERIES[case]
    value, meta = scorer(pid, answer)
    assert value == "I", meta


def test_the_eval_scorer_still_passes_right_answers(scorer):
    for pid, answer in HONEST.items():
        value, meta = scorer(pid, answer)
        assert value == "C" and meta["decided"] == "values", meta


def _fenced(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)


def test_no_shipped_config_or_skill_recipe_uses_unsafe_host():
    """unsafe-host stays an explicit choice: no example config and no code block of a skill selects it."""
    found = []
    for path in sorted((REPO / "examples").rglob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and "unsafe-host" in json.dumps(doc):
                found.append(str(path.relative_to(REPO)))
    for path in sorted((REPO / "skills").rglob("*.md")):
        if any("unsafe-host" in block for block in _fenced(path.read_text(encoding="utf-8"))):
            found.append(str(path.relative_to(REPO)))
    assert found == []
    example = yaml.safe_load((REPO / "examples" / "gemma4-pi-traces.yaml").read_text())
    assert example["job"]["backend"] == "hf" and example["eval"]["sandbox"] == "confined"
    skill = (REPO / "skills" / "tunepack-evaluation" / "SKILL.md").read_text()
    assert "--backend hf" in skill and "--sandbox confined" in skill
