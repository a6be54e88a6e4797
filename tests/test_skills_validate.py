"""Every shipped skill meets the Agent Skills standard (our checks and `agentskills validate`), and the
checks catch what they should."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server.skills.validate import check_all, check_skill

REPO = Path(__file__).resolve().parents[1]
SKILLS = sorted(p.parent for p in (REPO / "skills").glob("*/SKILL.md"))


def test_the_pack_has_the_skills_the_pipeline_needs():
    assert {p.name for p in SKILLS} >= {"tunepack-pipeline", "tunepack-sft", "tunepack-hf-jobs", "tunepack-trackio",
                                        "tunepack-viewer", "tunepack-evaluation", "tunepack-traces"}


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_shipped_skill_passes_our_checks(folder):
    assert check_skill(folder) == []


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_shipped_skill_passes_agentskills_validate(folder):
    cli = shutil.which("agentskills", path=str(Path(sys.executable).parent))
    assert cli, "skills-ref is part of the dev extra: pip install -e '.[dev]'"
    out = subprocess.run([cli, "validate", str(folder)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_every_skill_names_mcp_tools_and_cli_commands(folder):
    body = (folder / "SKILL.md").read_text()
    assert "tunepack " in body, "name the CLI equivalent"
    tools = ("pipeline_", "jobs_", "tracking_", "registry_", "skills_", "data_", "viewer_", "eval_", "traces_",
             "budget_", "ledger_", "research_")
    assert any(f"`{t}" in body for t in tools), "name the MCP tools"




SFT_VERSION = re.search(r'version: "([^"]+)"', (REPO / "skills" / "tunepack-sft" / "SKILL.md").read_text()).group(1)


@pytest.mark.parametrize("old, new, needle", [
    ("name: tunepack-sft", "name: Tunepack_SFT", "must be 1-64 chars"),
    ("name: tunepack-sft", "name: tunepack-other", "differs from the folder"),
    ("license: Apache-2.0", "license: Apache-2.0\nversion: 1.0.0", "key 'version' is not allowed"),
    (f'version: "{SFT_VERSION}"', "version: 0.1", "metadata must be a map of strings"),
    (f'version: "{SFT_VERSION}"', 'version: "9.9.9"', f"CHANGELOG.md's newest entry is {SFT_VERSION}"),
    ("Use when writing", "Good for writing", "should say when to use"),
    ("<!-- tunepack:pitfalls:start -->", "", "lacks the pitfalls markers"),
])
def test_the_checks_catch_broken_skills(tmp_path, old, new, needle):
    folder = tmp_path / "tunepack-sft"
    shutil.copytree(REPO / "skills" / "tunepack-sft", folder)
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text().replace(old, new, 1))
    assert any(needle in p for p in check_skill(folder)), check_skill(folder)


def test_drift_between_the_list_and_the_pitfalls_file_is_caught(tmp_path):
    folder = tmp_path / "tunepack-sft"
    shutil.copytree(REPO / "skills" / "tunepack-sft", folder)
    with (folder / "references" / "pitfalls.md").open("a") as fh:
        fh.write("\n## P-099: Added by hand\n\n- **Symptom:** Added by hand\n- **Cause:** someone edited the file\n"
                 "- **Fix:** use tunepack pitfall add\n- **Evidence:** \n- **Date:** 2026-11-30\n- **Source:** test\n")
    assert any("out of date" in p for p in check_skill(folder))
    long_body = (folder / "SKILL.md").read_text() + "\nline" * 600
    (folder / "SKILL.md").write_text(long_body)
    assert any("at most 500" in p for p in check_all(tmp_path)["tunepack-sft"])
