"""`tunepack pitfall add|list` and `tunepack skills list|check|sync` from the shell."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.common import run_cli

REPO = Path(__file__).resolve().parents[1]


def test_pitfall_add_list_and_check_on_a_copy(tmp_path):
    root = tmp_path / "skills"
    shutil.copytree(REPO / "skills" / "tunepack-pipeline", root / "tunepack-pipeline")
    added = run_cli("pitfall", "add", "tunepack-pipeline", "--skills-dir", str(root),
                    "--symptom", "what you saw in the job log", "--cause", "why it happened there",
                    "--fix", "what to do instead next time", "--evidence", "job local-42: exit 3")
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)
    assert result["added"] and result["pitfalls_path"] == str(root / "tunepack-pipeline" / "references" / "pitfalls.md")
    listed = run_cli("pitfall", "list", "tunepack-pipeline", "--skills-dir", str(root))
    assert f"{result['id']}" in listed.stdout and "what you saw in the job log" in listed.stdout
    assert run_cli("skills", "check", "--skills-dir", str(root)).returncode == 0
    assert "tunepack-pipeline" in run_cli("skills", "list", "--skills-dir", str(root)).stdout
    # the clone's own skills were not touched
    assert "what you saw in the job log" not in (REPO / "skills" / "tunepack-pipeline" / "references" / "pitfalls.md").read_text()


def test_missing_fields_and_drift_are_one_clean_error(tmp_path):
    root = tmp_path / "skills"
    shutil.copytree(REPO / "skills" / "tunepack-sft", root / "tunepack-sft")
    bad = run_cli("pitfall", "add", "tunepack-sft", "--skills-dir", str(root), "--symptom", "only a symptom here")
    assert bad.returncode == 1 and "needs --symptom, --cause and --fix" in bad.stderr
    with (root / "tunepack-sft" / "references" / "pitfalls.md").open("a") as fh:
        fh.write("\n## P-050: Hand-written\n\n- **Symptom:** Hand-written\n- **Cause:** edited by hand\n"
                 "- **Fix:** use the command\n- **Evidence:** \n- **Date:** 2026-11-30\n- **Source:** test\n")
    drift = run_cli("skills", "check", "--skills-dir", str(root))
    assert drift.returncode == 1 and "out of date" in drift.stderr and drift.stderr.count("\n") == 1
    assert "updated" in run_cli("skills", "sync", "--skills-dir", str(root)).stdout
    assert run_cli("skills", "check", "--skills-dir", str(root)).returncode == 0
