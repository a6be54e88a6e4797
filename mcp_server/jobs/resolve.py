"""Resolve a rendered script's PEP 723 header the way its HF job will, before anything is spent.

    env = resolve_header(script_text)      # Resolution(ok, resolver, versions={"torch": "2.13.0", ...}, problem, fix)

An HF job runs the script with `uv run`, which resolves the header's dependencies on the job's machine (Linux
x86_64, glibc 2.28 or newer, the image's Python): a header that does not resolve, or resolves to versions the
run was never tested with (a vLLM that pulls another torch), is otherwise found out after the GPU is billed. This
asks uv the same question here — ``uv pip compile`` for that platform, no install — and returns the versions
that matter. uv comes with tunepack's dev extra and the `uv` package; without it, or without the package index,
the answer says so (``ok`` None) instead of guessing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import tomllib

from packaging.requirements import Requirement
from pydantic import BaseModel

from .. import settings

JOB_PYTHON = "3.12"  # the HF Jobs uv image
JOB_PLATFORM = "x86_64-manylinux_2_28"
SHOWN = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "bitsandbytes", "vllm", "trackio")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)")
LIVE_FOR_S = 3600.0  # a resolution on the live index is reused this long in one process; a fixed day's, always
_SEEN: dict[tuple, tuple[float, "Resolution"]] = {}


class Resolution(BaseModel):
    ok: bool | None  # None: not checked here (no uv, no index), with the reason in ``problem``
    resolver: str
    versions: dict[str, str] = {}
    problem: str | None = None
    fix: str | None = None

    def line(self) -> str:
        shown = ", ".join(f"{k} {v}" for k, v in self.versions.items())
        return f"resolved with {self.resolver} for {JOB_PLATFORM} / Python {JOB_PYTHON}: {shown}"


def header_dependencies(script_text: str) -> list[str]:
    """The ``dependencies`` of a script's PEP 723 block."""
    match = re.search(r"^# /// script\s*$(.*?)^# ///\s*$", script_text, re.S | re.M)
    if not match:
        return []
    body = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in match.group(1).splitlines())
    return list(tomllib.loads(body).get("dependencies") or [])


def _uv() -> str | None:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def resolve_header(script_text: str, **options) -> Resolution:
    """The versions uv picks for a script's PEP 723 header on the job's platform (options: ``resolve``'s)."""
    return resolve(header_dependencies(script_text), **options)


def resolve(deps: list[str], *, exclude_newer: str | None = None, within: dict[str, str] | None = None,
            timeout_s: float = 120) -> Resolution:
    """The versions uv picks for ``deps`` on the job's platform. ``exclude_newer`` (RFC 3339): the index as it was
    then (default TUNEPACK_RESOLVE_BEFORE, else the live index). ``within``: package -> the range it must land in
    (vLLM inside what the pinned TRL supports), a resolution outside it is refused."""
    exclude_newer = exclude_newer or settings.resolve_before()
    key = (tuple(deps), exclude_newer, tuple(sorted((within or {}).items())))
    seen = _SEEN.get(key)
    if seen is not None and (exclude_newer or time.time() - seen[0] < LIVE_FOR_S):
        return seen[1].model_copy(deep=True)
    found = _resolve(deps, exclude_newer, within, timeout_s)
    if found.ok is not None:  # an unreachable index is asked again next time
        _SEEN[key] = (time.time(), found)
    return found.model_copy(deep=True)


def _resolve(deps: list[str], exclude_newer: str | None, within: dict[str, str] | None,
             timeout_s: float) -> Resolution:
    uv = _uv()
    if uv is None:
        return Resolution(ok=None, resolver="none", problem="uv is not installed here, so the job's environment "
                          "was not resolved before spending", fix="pip install uv, then run preflight again")
    args = [uv, "pip", "compile", "-", "--python-version", JOB_PYTHON, "--python-platform", JOB_PLATFORM,
            "--no-header", "--no-annotate", "--quiet", *(["--exclude-newer", exclude_newer] if exclude_newer else [])]
    try:
        done = subprocess.run(args, input="\n".join(deps) + "\n", capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return Resolution(ok=None, resolver="uv", problem=f"the package index did not answer within {timeout_s:.0f} s",
                          fix="run preflight again with the index reachable")
    if done.returncode != 0:
        text = done.stderr.strip()
        if re.search(r"(?i)(failed to fetch|connect|dns|network|offline)", text) and "No solution" not in text:
            return Resolution(ok=None, resolver="uv", problem="the package index could not be reached: "
                              + text.splitlines()[-1][:200], fix="run preflight again with the index reachable")
        why = " ".join(line.strip() for line in text.splitlines() if line.strip())[:600]
        return Resolution(ok=False, resolver="uv", problem=f"the script's dependencies do not resolve for the job "
                          f"({JOB_PLATFORM}, Python {JOB_PYTHON}): {why}",
                          fix="loosen or change the pins uv names above (a vLLM needs a transformers and torch it "
                          "accepts); the job would fail installing them")
    found: dict[str, str] = {}
    for m in filter(None, map(PIN.match, done.stdout.splitlines())):
        found[m.group(1).lower().replace("_", "-")] = m.group(2)
    versions = {k: found[k] for k in SHOWN if k in found}
    outside = [f"{name} {versions[name]} (needs {spec})" for name, spec in (within or {}).items()
               if name in versions and versions[name] not in Requirement(f"{name}{spec}").specifier]
    if outside:
        return Resolution(ok=False, resolver="uv", versions=versions, problem=f"the job would get {', '.join(outside)}: "
                          "outside the range the pinned TRL supports, so its GRPO path may break after the GPU is "
                          "billed", fix="bound the package in the header to that range (`trl[vllm]==…` or explicit "
                          "bounds) with a transformers it accepts")
    return Resolution(ok=True, resolver="uv", versions=versions)

