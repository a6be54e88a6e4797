"""The wheel installs (core, no extras) into fresh virtual environments on Python 3.11, 3.12 and 3.13, and
there ``tunepack --version`` works, ``tunepack serve`` answers tools/list over stdio, and nothing pulls torch.

The three environments are built in parallel with uv when it is installed (the dev extra has it; a few
seconds), else with pip (about two minutes on two cores). An interpreter that is not on this machine is
skipped with its name; an unreachable package index skips with what the installer said.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from support.common import REPO
from mcp import Client, StdioServerParameters

VERSIONS = ("3.11", "3.12", "3.13")
INSTALL_TIMEOUT_S = 420
OFFLINE = re.compile(r"failed to fetch|dns error|connection (refused|reset|error)|network is unreachable|"
                     r"could not connect|temporary failure in name resolution|max retries exceeded|"
                     r"no matching distribution found", re.I)


def _reports(python: str, version: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def find_python(version: str) -> str | None:
    """A python of that minor version: pyenv's versions first, then PATH (not a virtual environment's)."""
    roots = []
    try:
        roots.append(subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30).stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    roots.append(os.path.expanduser("~/.pyenv"))
    candidates = [p for root in roots if root for p in sorted(glob.glob(f"{root}/versions/{version}*/bin/python{version}"))]
    candidates += [p for p in (shutil.which(f"python{version}"),) if p]
    return next((p for p in candidates if _reports(p, version)), None)


def uv_binary() -> str | None:
    try:
        import uv

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def installer_env() -> dict[str, str]:
    env = os.environ.copy()
    if env.get("PIP_INDEX_URL") and not (env.get("UV_DEFAULT_INDEX") or env.get("UV_INDEX_URL")):
        env["UV_DEFAULT_INDEX"] = env["PIP_INDEX_URL"]  # uv does not read pip's settings
    return env


def install(python: str, venv: Path, wheel: Path) -> tuple[float, subprocess.CompletedProcess]:
    """A fresh venv with the wheel and its core dependencies; (seconds, the installer's result)."""
    start = time.perf_counter()
    uv = uv_binary()
    if uv:
        steps = [[uv, "venv", "--quiet", "--python", python, str(venv)],
                 [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)]]
    else:  # pip of this environment installs into the new one (pip ≥ 22.3): no pip bootstrap per venv
        steps = [[python, "-m", "venv", "--without-pip", str(venv)],
                 [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", str(wheel)]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=installer_env())
        if done.returncode != 0:
            break
    return time.perf_counter() - start, done


def _can_build_here() -> bool:
    """setuptools ≥ 70.1 here (bdist_wheel built in): the wheel builds without an isolated build environment."""
    try:
        import setuptools
    except ImportError:
        return False
    return tuple(int(x) for x in setuptools.__version__.split(".")[:2]) >= (70, 1)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    isolation = ["--no-build-isolation"] if _can_build_here() else []
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(out),
                           str(REPO)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = out.glob("tunepack-*.whl")
    return built


def _clean_env(home: Path) -> dict[str, str]:
    """The test environment without this checkout on the import path (the wheel must stand alone)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["TUNEPACK_HOME"] = str(home)
    return env


PROBE = "import importlib.util as u, mcp_server; print(mcp_server.__file__); print(u.find_spec('torch') is None)"


def check(venv: Path, work: Path) -> dict:
    """What the installed tunepack says: --version, where it imports from, whether torch exists, the tools served."""
    env = _clean_env(work / "home")
    tunepack = venv / "bin" / "tunepack"
    version = subprocess.run([str(tunepack), "--version"], capture_output=True, text=True, timeout=120, env=env,
                             cwd=work)
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", PROBE], capture_output=True, text=True, timeout=120,
                           env=env, cwd=work)

    async def listed():
        params = StdioServerParameters(command=str(tunepack), args=["serve", "--toolsets", "all"], env=env,
                                       cwd=str(work))
        with anyio.fail_after(120):
            async with Client(params) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    return {"version": (version.returncode, version.stdout.strip(), version.stderr[-1500:]),
            "probe": (probe.returncode, probe.stdout.split(), probe.stderr[-1500:]), "tools": anyio.run(listed)}


def install_and_check(python: str, root: Path, wheel: Path) -> dict:
    venv = root / "venv"
    seconds, done = install(python, venv, wheel)
    text = (done.stdout + done.stderr)[-3000:]
    if done.returncode != 0:
        return {"install_s": seconds, "failed": text}
    started = time.perf_counter()
    return {"install_s": seconds, "venv": venv, **check(venv, root), "check_s": time.perf_counter() - started}


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict[str, dict | str]:
    """Per version: what its fresh venv said (installed and checked in parallel), or why it is skipped."""
    root = tmp_path_factory.mktemp("venvs")
    pythons = {v: find_python(v) for v in VERSIONS}
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(VERSIONS)) as pool:
        futures = {v: pool.submit(install_and_check, p, root / f"py{v}", wheel) for v, p in pythons.items() if p}
        results = {v: f.result() for v, f in futures.items()}
    print(f"\n[install] {'uv' if uv_binary() else 'pip'}, {len(results)} venvs in parallel, installed and checked in "
          f"{time.perf_counter() - start:.1f} s wall; "
          + ", ".join(f"{v}: install {r['install_s']:.1f} s + check {r.get('check_s', 0):.1f} s"
                      for v, r in sorted(results.items())), file=sys.stderr)
    out: dict[str, dict | str] = {}
    for v in VERSIONS:
        if not pythons[v]:
            out[v] = f"no Python {v} here (looked in `pyenv root`/versions, ~/.pyenv/versions and PATH)"
        elif "failed" in results[v] and OFFLINE.search(results[v]["failed"]):
            out[v] = f"the package index is unreachable, so Python {v}'s dependencies cannot install: " + \
                results[v]["failed"]
        else:
            out[v] = results[v]
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_the_wheel_installs_and_serves(installed, version):
    from mcp_server.server import all_tools

    result = installed[version]
    if isinstance(result, str):
        pytest.skip(result)
    assert "failed" not in result, f"installing the wheel on Python {version} failed:\n{result.get('failed')}"
    code, out, err = result["version"]
    assert code == 0 and re.fullmatch(r"tunepack \d+\.\d+\.\d+\S*", out), err
    code, (location, no_torch), err = result["probe"][0], result["probe"][1], result["probe"][2]
    assert code == 0, err
    assert location.startswith(str(result["venv"])), location  # the installed copy, not this checkout
    assert no_torch == "True", "a core install (no extras) must not pull torch"
    assert sorted(result["tools"]) == sorted(tool.__name__ for tool in all_tools())
