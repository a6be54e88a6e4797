"""Packaging: a light core import, and templates + skills inside the wheel."""

import subprocess
import sys
import zipfile

from support.common import REPO

HEAVY = ("torch", "transformers", "trl", "peft", "datasets", "trackio", "bitsandbytes", "inspect_ai", "matplotlib")


def test_core_modules_import_without_heavy_libraries():
    code = ("import sys, mcp_server.cli, mcp_server.pipeline, mcp_server.jobs, mcp_server.registry, "
            "mcp_server.tracking, mcp_server.config, mcp_server.train.render, mcp_server.train.maskcheck, "
            "mcp_server.pipeline.preflight, mcp_server.viewer, mcp_server.skills, mcp_server.approval\n"
            "from mcp_server.server import build_server\nbuild_server()\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_wheel_carries_templates_and_skills(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("tunepack-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "mcp_server/assets/templates/sft_train.py.j2" in names
    assert "mcp_server/assets/templates/model_card.md.j2" in names
    assert "mcp_server/assets/skills/tunepack-pipeline/SKILL.md" in names
    assert "mcp_server/train/pins.yaml" in names and "mcp_server/train/maskcheck.py" in names
    assert "mcp_server/jobs/flavors.yaml" in names and "mcp_server/server/pipeline_tools.py" in names
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "tunepack = mcp_server.cli:main" in entry
