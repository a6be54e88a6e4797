"""Environment variables are read in one module: ``mcp_server/settings.py`` (apart from the code that runs
inside job scripts without the package, which it names)."""

from __future__ import annotations

import re

from mcp_server import settings
from support.common import REPO

JOB_SIDE = ("mcp_server/jobs/markers.py", "mcp_server/evals/kit/")


def test_only_settings_reads_the_environment():
    offenders = []
    for path in sorted((REPO / "mcp_server").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if "/assets/" in rel or rel == "mcp_server/settings.py" or rel.startswith(JOB_SIDE):
            continue
        if re.search(r"os\.environ|os\.getenv", path.read_text()):
            offenders.append(rel)
    assert not offenders, f"read these variables through mcp_server/settings.py: {offenders}"


def test_every_variable_read_is_documented(monkeypatch):
    names = set(re.findall(r'_get\("([A-Z_]+)"\)', (REPO / "mcp_server" / "settings.py").read_text()))
    assert {"TUNEPACK_HOME", "TRACKIO_DIR", "TUNEPACK_TOOLSETS", "TUNEPACK_DAILY_BUDGET_USD"} <= names
    for name in names:
        assert f"``{name}``" in settings.__doc__, name


def test_values_are_read_when_asked(monkeypatch, tmp_path):
    monkeypatch.setenv("TUNEPACK_LOCAL_MAX_JOBS", "5")
    monkeypatch.setenv("TUNEPACK_HOME", str(tmp_path / "h"))
    assert settings.local_max_jobs() == 5 and settings.home_root() == (tmp_path / "h").resolve()
    monkeypatch.setenv("TUNEPACK_LOCAL_MAX_JOBS", "")
    assert settings.local_max_jobs() == 2  # empty = unset
