"""Skills are tested like code: every code block in every skill (SKILL.md and references/) runs or parses.

- ```bash            executed with bash -euo pipefail in the repo, against a copy of the state the
                     README demo left (the session's shared demo fixture; never re-run here);
- ```bash demo       the README demo command itself: it must be exactly what the demo fixture ran;
- ```bash parse-only needs a GPU, the network or a token: checked with bash -n (the skill says why);
- ```yaml / ```json / ```python   parsed.
Any other fence tag fails, so a new kind of block cannot slip through untested.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```([A-Za-z]*)([^\n]*)\n(.*?)^```\s*$", re.M | re.S)
DEMO_COMMAND = "tunepack run examples/demo.yaml"


def blocks() -> list[tuple[str, str, str, str]]:
    out = []
    for path in sorted((REPO / "skills").glob("*/SKILL.md")) + sorted((REPO / "skills").glob("*/references/*.md")):
        for n, m in enumerate(FENCE.finditer(path.read_text(encoding="utf-8"))):
            out.append((f"{path.relative_to(REPO / 'skills')}#{n}", m.group(1), m.group(2).strip(), m.group(3)))
    return out


BLOCKS = blocks()


@pytest.fixture(scope="module")
def demo_state(demo_run, tmp_path_factory) -> dict:
    """A copy of the tunepack home and Trackio folder after the demo, so commands cannot disturb it."""
    root = tmp_path_factory.mktemp("skills-state")
    shutil.copytree(os.environ["TUNEPACK_HOME"], root / "home", ignore=shutil.ignore_patterns("*.lock"))
    shutil.copytree(os.environ["TRACKIO_DIR"], root / "trackio")
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "TUNEPACK_HOME": str(root / "home"), "TRACKIO_DIR": str(root / "trackio"),
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "TUNEPACK_OFFLINE": "1"}


def test_there_are_blocks_of_every_kind():
    kinds = {(lang, tag) for _, lang, tag, _ in BLOCKS}
    assert {("bash", ""), ("bash", "parse-only"), ("bash", "demo"), ("yaml", "")} <= kinds
    assert sum(1 for _, lang, tag, _ in BLOCKS if lang == "bash" and not tag) >= 10


@pytest.mark.parametrize("where, lang, tag, code", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_block(where, lang, tag, code, request, tmp_path):
    if lang == "bash" and tag == "":
        env = {**request.getfixturevalue("demo_state"), "TMPDIR": str(tmp_path)}
        out = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, f"{where} failed:\n{code}\n--- stdout\n{out.stdout[-2000:]}\n--- stderr\n{out.stderr[-3000:]}"
    elif lang == "bash" and tag == "demo":
        assert code.strip() == DEMO_COMMAND
        assert request.getfixturevalue("demo_run")["registry_name"]  # the fixture ran exactly this command
    elif lang == "bash" and tag == "parse-only":
        out = subprocess.run(["bash", "-n", "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert code.strip(), "empty block"
    elif lang == "yaml" and not tag:
        assert yaml.safe_load(code) is not None
    elif lang == "json" and not tag:
        json.loads(code)
    elif lang == "python" and not tag:
        ast.parse(code)
    elif lang == "" and not tag:
        pass  # plain text (tables of output, prompts): nothing to run
    else:
        pytest.fail(f"{where}: unknown fence '{lang} {tag}' — use bash, bash parse-only, bash demo, yaml, json, python")
