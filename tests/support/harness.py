"""Running the real harness CLIs (OpenCode, Codex, Claude Code from node_modules/.bin, pinned in
package.json) in a throw-away HOME, so nothing reads or writes the real one."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from support.common import REPO

BIN = REPO / "node_modules" / ".bin"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def cli(name: str) -> Path:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{path} is missing: run `npm ci --no-audit --no-fund` (CI does) to install the pinned "
                    "harness CLIs")
    return path


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """The test environment with HOME and the XDG folders inside ``home`` (no logins, no user config)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCODE", "CODEX_", "CLAUDE", "ANTHROPIC", "OPENAI", "XDG_"))}
    for sub in ("config", "data", "cache", "state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
               XDG_CACHE_HOME=str(home / "cache"), XDG_STATE_HOME=str(home / "state"), NO_COLOR="1",
               CI="true", DISABLE_AUTOUPDATER="1", OPENCODE_DISABLE_AUTOUPDATE="1",
               OPENCODE_DISABLE_MODELS_FETCH="1", **extra)
    return env


def run(args: list, env: dict, cwd: Path = REPO, timeout: int = 120, split: bool = False):
    """Run a harness command; return its exit code and stdout + stderr without colour codes (or, with
    ``split``, the exit code, stdout and stderr)."""
    # Output goes to files, not pipes: these Node/Bun CLIs exit before a pipe drains and cut stdout
    # at 64 KiB (`opencode debug skill` prints every skill's text as JSON).
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        code = subprocess.run([str(a) for a in args], cwd=cwd, env=env, stdout=out, stderr=err, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL).returncode
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if split:
        return code, ANSI.sub("", stdout), ANSI.sub("", stderr)
    return code, ANSI.sub("", stdout + stderr)


def skill_names() -> set[str]:
    return {p.parent.name for p in (REPO / "skills").glob("*/SKILL.md")}
