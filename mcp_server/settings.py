"""Every environment variable tunepack reads, in one place (read when asked, never cached, so a test or a
server that changes one sees the change).

| variable | meaning | default |
|---|---|---|
| ``TUNEPACK_HOME`` | state: jobs, registry, runs, sweeps, ledger, budget | ``$XDG_CACHE_HOME/tunepack`` or ``~/.cache/tunepack`` |
| ``TRACKIO_DIR`` | Trackio's SQLite folder | ``$HF_HOME/trackio`` or ``~/.cache/huggingface/trackio`` |
| ``TUNEPACK_SKILLS_DIR`` | the skills folder pitfalls are written to | the package's skills |
| ``TUNEPACK_TOOLSETS`` | toolsets ``tunepack serve`` exposes | ``core`` |
| ``TUNEPACK_PYTHON`` | the interpreter local jobs run with | this interpreter |
| ``TUNEPACK_LOCAL_MAX_JOBS`` | local jobs running at once | 2 |
| ``TUNEPACK_DAILY_BUDGET_USD`` | a project's daily budget until a human sets one | ``approval.budget.DEFAULT_DAILY_USD`` |
| ``TUNEPACK_DAILY_TOTAL_USD`` | the daily cap over all projects until a human sets one | the largest project limit |
| ``TUNEPACK_TOOL_BUDGET_S`` | seconds a viewer tool may take before it answers with what it has | 15 |
| ``TUNEPACK_RESOLVE_BEFORE`` | resolve job headers against the package index as it was at this time (RFC 3339; tests fix it, ``bench/resolve_drift.py`` names what moved since) | the live index |
| ``TUNEPACK_VIEWER_URL`` | the Datasets Viewer's base URL | ``https://datasets-server.huggingface.co`` |
| ``OMP_NUM_THREADS`` | kept for local jobs when set (read from the mapping ``environment()`` returns); unset, the runner splits the cores between the jobs running side by side | the split |
| ``TUNEPACK_JOB_ID`` | set by the local runner inside a job | — |
| ``TUNEPACK_LOOP_CRASH_AFTER`` | tests only: a loop cycle stops its process right after writing this phase (a crash to resume from) | unset |
| ``TUNEPACK_CUSTODIAN`` | ``1`` in the custodian server's process (``serve --custodian`` sets it) and the local jobs it starts: no code the agent can influence runs there (the eval kit reads it too) | unset |
| ``XDG_CACHE_HOME``, ``HF_HOME`` | the bases of the two defaults above | ``~/.cache``, ``~/.cache/huggingface`` |
| ``HF_ENDPOINT`` | the Hub's base URL | huggingface_hub's |
| ``HOME``, ``XDG_CONFIG_HOME``, ``CODEX_HOME``, ``CLAUDE_CONFIG_DIR`` | where ``tunepack setup --user`` finds each harness's user config (read from the mapping ``environment()`` returns) | the harness's own default |
| ``PYTHONPATH`` | kept, with the package's folder in front, for local jobs | — |
| named secrets (``HF_TOKEN`` …) | values a job asks for by name, read only to pass them on | — |

Not read here, on purpose: the job side of the log-marker protocol (``jobs/markers.py`` reads ``RANK``) and the
eval kit (``evals/kit/``, which reads tiktoken's cache variables and the offline flags) are embedded into or run
inside job scripts without the rest of the package.
"""

from __future__ import annotations

import os
from pathlib import Path


def _get(name: str) -> str | None:
    return os.environ.get(name) or None


def home_root() -> Path:
    root = _get("TUNEPACK_HOME") or os.path.join(_get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tunepack")
    return Path(root).expanduser().resolve()


def trackio_root() -> Path:
    env = _get("TRACKIO_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return Path(_get("HF_HOME") or os.path.expanduser("~/.cache/huggingface")) / "trackio"


def hf_home() -> Path:
    """The Hugging Face home (``HF_HOME``, else ``~/.cache/huggingface``): where its token file lives."""
    return Path(_get("HF_HOME") or os.path.expanduser("~/.cache/huggingface")).expanduser()


def skills_dir_override() -> Path | None:
    env = _get("TUNEPACK_SKILLS_DIR")
    return Path(env).expanduser() if env else None


def set_skills_dir(path: str) -> None:
    """The CLI's ``--skills-dir``: for this process and the jobs it starts."""
    os.environ["TUNEPACK_SKILLS_DIR"] = path


def toolsets() -> str | None:
    return _get("TUNEPACK_TOOLSETS")


def job_python() -> str | None:
    return _get("TUNEPACK_PYTHON")


def local_max_jobs() -> int:
    return int(_get("TUNEPACK_LOCAL_MAX_JOBS") or 2)


def daily_budget_usd(default: float) -> float:
    return float(_get("TUNEPACK_DAILY_BUDGET_USD") or default)


def daily_total_usd() -> float | None:
    value = _get("TUNEPACK_DAILY_TOTAL_USD")
    return float(value) if value else None


def tool_budget_s() -> float:
    return float(_get("TUNEPACK_TOOL_BUDGET_S") or 15)


def resolve_before() -> str | None:
    return _get("TUNEPACK_RESOLVE_BEFORE")


def viewer_url() -> str | None:
    return _get("TUNEPACK_VIEWER_URL")


def job_id() -> str | None:
    return _get("TUNEPACK_JOB_ID")


def hf_endpoint() -> str | None:
    return _get("HF_ENDPOINT")


def pythonpath() -> str | None:
    """Where local jobs find the package when it is not installed (prepended to, not replaced)."""
    return _get("PYTHONPATH")


def secret(name: str) -> str | None:
    """The value of a secret a job asked for by name (passed on to the job, never printed)."""
    return _get(name)


def set_default(name: str, value: str) -> None:
    """Set a variable a library reads (e.g. matplotlib's ``MPLCONFIGDIR``) unless the user set it."""
    os.environ.setdefault(name, value)


def environment(**extra: str) -> dict[str, str]:
    """This process's environment plus ``extra``: what a local job starts with."""
    return {**os.environ, **extra}


def custodian_mode() -> bool:
    """Is this process the custodian server, or a job it started?"""
    return _get("TUNEPACK_CUSTODIAN") == "1"


def set_custodian_mode() -> None:
    """``serve --custodian``: this process and every job it starts (they inherit the environment)."""
    os.environ["TUNEPACK_CUSTODIAN"] = "1"


def loop_crash_after() -> str | None:
    """Tests: the loop phase after which a cycle stops its process, as a crash would."""
    return _get("TUNEPACK_LOOP_CRASH_AFTER")

