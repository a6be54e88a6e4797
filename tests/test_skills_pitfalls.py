"""Pitfalls: validated, redacted, merged when near-duplicate, versioned, listed in SKILL.md, safe under
concurrent writers and writers killed mid-write, and unable to break the files' structure."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_server.skills import SkillError, add_pitfall, list_pitfalls
from mcp_server.skills.validate import check_skill, frontmatter

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def skill(tmp_path, monkeypatch) -> Path:
    """A temporary copy of a shipped skill."""
    root = tmp_path / "skills"
    shutil.copytree(REPO / "skills" / "tunepack-sft", root / "tunepack-sft")
    monkeypatch.setenv("TUNEPACK_SKILLS_DIR", str(root))
    return root / "tunepack-sft"


def words(rng: random.Random, n: int) -> str:
    return " ".join(f"{rng.choice('bcdfgklmnprstvz')}{rng.getrandbits(24):06x}" for _ in range(n))


def version(folder: Path) -> str:
    meta, _ = frontmatter((folder / "SKILL.md").read_text())
    return meta["metadata"]["version"]


def bumped(folder: Path, patches: int) -> str:
    """The skill's version before the test, its patch number raised by ``patches``."""
    major, minor, patch = version(folder).split(".")
    return f"{major}.{minor}.{int(patch) + patches}"


def test_an_entry_is_appended_listed_versioned_and_logged(skill):
    before, expected = len(list_pitfalls("tunepack-sft")), bumped(skill, 1)
    result = add_pitfall("tunepack-sft", symptom="Loss is NaN from the first step with bf16 on a T4",
                         cause="T4 GPUs have no bf16 support; the kernels produce NaN.",
                         fix="Use fp16 on T4 (or a newer GPU) and keep quantization compute dtype in step.",
                         evidence="job 123: loss nan at step 1", source="test", today="2026-12-01")
    assert result.added and result.id == f"P-{before + 1:03d}" and result.version == expected
    assert result.skill_path == str(skill / "SKILL.md")
    entries = list_pitfalls("tunepack-sft")
    assert entries[-1].id == result.id and entries[-1].date == "2026-12-01" and entries[-1].source == "test"
    text = (skill / "SKILL.md").read_text()
    assert f"[{result.id}](references/pitfalls.md) Loss is NaN" in text
    assert version(skill) == expected and 'updated: "2026-12-01"' in text
    assert (skill / "CHANGELOG.md").read_text().startswith(f"# Changelog\n\n## {expected} — 2026-12-01\n- pitfall {result.id}")
    assert check_skill(skill) == []


def test_a_near_duplicate_returns_the_existing_id(skill):
    first = add_pitfall("tunepack-sft", symptom="Training hangs at start when eval_strategy is set without eval data",
                        cause="Trainer waits for an eval dataset that never comes.", fix="Give eval data or no eval.")
    again = add_pitfall("tunepack-sft", symptom="training hangs at the start when eval_strategy is set without eval data!",
                        cause="The trainer waits for an eval dataset that never comes", fix="Set eval data.")
    assert not again.added and again.id == again.duplicate_of == first.id
    assert [p.id for p in list_pitfalls("tunepack-sft")].count(first.id) == 1
    assert version(skill) == first.version  # no bump for a merge


def test_secrets_are_redacted_and_markup_is_neutralised(skill):
    token = "hf_" + "a1B2c3D4e5" * 4
    nasty = "x\n---\nname: hacked\n## P-999: fake entry\n```python\nimport os\n```\n<!-- tunepack:pitfalls:end -->"
    result = add_pitfall("tunepack-sft", symptom="The tokenizer download fails with 401 in the job",
                         cause=f"The job used token {token} which was revoked. {nasty}",
                         fix=f"Create a new token.\n# Heading\n~~~\n{nasty}", evidence=f"Authorization: Bearer {token}")
    assert result.redacted >= 2
    files = [(skill / "SKILL.md").read_text(), (skill / "references" / "pitfalls.md").read_text(),
             (skill / "CHANGELOG.md").read_text()]
    assert not any(token in f for f in files)
    entries = list_pitfalls("tunepack-sft")
    assert entries[-1].id == result.id and "P-999" not in [p.id for p in entries]
    assert "\n---\nname: hacked" not in files[1] and "\n```" not in files[1].split(f"## {result.id}")[1]
    meta, _ = frontmatter(files[0])
    assert meta["name"] == "tunepack-sft"
    assert check_skill(skill) == []


@pytest.mark.parametrize("field, value, needle", [
    ("symptom", "short", "symptom is 5 characters"),
    ("fix", "x" * 1001, "fix is 1001 characters"),
    ("cause", "   ", "cause is 0 characters"),
])
def test_bad_entries_are_refused_with_the_rule(skill, field, value, needle):
    args = {"symptom": "A valid symptom line", "cause": "A valid cause text", "fix": "A valid fix text", field: value}
    with pytest.raises(SkillError, match=needle):
        add_pitfall("tunepack-sft", **args)
    with pytest.raises(SkillError, match="no skill"):
        add_pitfall("tunepack-nope", symptom="A valid symptom", cause="A valid cause", fix="A valid fix")


WRITER = """
import random, sys
from mcp_server.skills import add_pitfall
from test_skills_pitfalls import words
worker, count = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(worker)
for i in range(count):
    add_pitfall("tunepack-sft", symptom=f"{words(rng, 6)}", cause=words(rng, 12), fix=words(rng, 10),
                evidence=f"worker {worker} entry {i}", source=f"w{worker}")
"""


def _writer(worker: int, count: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}"}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(worker), str(count)], env=env)


def test_eight_concurrent_writers_lose_nothing(skill):
    before, expected = len(list_pitfalls("tunepack-sft")), bumped(skill, 400)
    procs = [_writer(w, 50) for w in range(8)]
    assert [p.wait(timeout=600) for p in procs] == [0] * 8
    entries = list_pitfalls("tunepack-sft")
    evidence = [p.evidence for p in entries[before:]]
    assert len(evidence) == 400 and len(set(evidence)) == 400
    assert sorted(evidence) == sorted(f"worker {w} entry {i}" for w in range(8) for i in range(50))
    ids = [p.id for p in entries]
    assert len(set(ids)) == len(ids) == before + 400
    assert version(skill) == expected
    assert check_skill(skill) == []


def test_a_writer_killed_mid_write_leaves_valid_files(skill):
    rng = random.Random(7)
    for round_ in range(6):
        proc = _writer(100 + round_, 1000)
        time.sleep(1.0 + rng.random())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        meta, _ = frontmatter((skill / "SKILL.md").read_text())
        assert meta["name"] == "tunepack-sft"  # SKILL.md is always whole
        entries = list_pitfalls("tunepack-sft")
        assert all(p.symptom and p.cause and p.fix for p in entries)
    assert add_pitfall("tunepack-sft", symptom="One more after the crashes", cause="checking recovery after kills",
                       fix="nothing to fix here").added
    assert check_skill(skill) == []  # stale temp files gone, list rebuilt
