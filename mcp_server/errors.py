"""The error hierarchy. Every error says what went wrong *and* what to do next.

The agent is the user: an error that reaches it must be something it can act on. Each error
carries a ``problem`` (what happened, naming the key, file, row or value) and a ``fix`` (the next
step). The CLI prints ``str(error)`` as one line; the MCP server returns it as an error result.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


class TunepackError(Exception):
    """Base class: a failure the caller can act on."""

    kind = "error"

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem.rstrip()
        self.fix = (fix or "").rstrip()
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.problem} Fix: {self.fix}" if self.fix else self.problem

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "problem": self.problem, "fix": self.fix}


class ConfigError(TunepackError):
    """The training config is invalid: a key, a type, a value or a combination."""

    kind = "config"


class DataError(TunepackError):
    """The dataset cannot be trained on as it is (missing, empty, rows without assistant turns,
    a chat template that drops tool calls, truncation of assistant tokens)."""

    kind = "data"


class JobError(TunepackError):
    """A job could not be started, followed, or finished successfully."""

    kind = "job"


class RegistryError(TunepackError):
    """The adapter registry refused an operation (missing adapter, unknown version)."""

    kind = "registry"


class TrackingError(TunepackError):
    """Trackio data could not be read (unknown project or run)."""

    kind = "tracking"


class TraceError(TunepackError):
    """Agent session files cannot be converted as asked (no sessions found, an unknown format, a chat
    template that cannot carry tool calls, an output path that cannot be written)."""

    kind = "traces"


class EvalError(TunepackError):
    """An evaluation could not run or its results cannot be shown (sandbox, tasks, contamination)."""

    kind = "eval"


class MissingExtraError(TunepackError):
    """A heavy optional dependency is not installed."""

    kind = "install"


class SkillError(TunepackError):
    """A skill is unknown, malformed, or refused a pitfall."""

    kind = "skill"


class ResearchError(TunepackError):
    """A Hub search (models, datasets, papers) failed or was asked something it cannot answer."""

    kind = "research"


class LedgerError(TunepackError):
    """The ledger refused an operation (unknown experiment, a duplicate, a wrong status change)."""

    kind = "ledger"


class HubError(TunepackError):
    """A Hugging Face Hub call failed (no token, unauthorised, unreachable, a refused upload)."""

    kind = "hub"


class HubUnreachable(TraceError):
    """The Hub could not be reached (offline, DNS, proxy): the sessions cannot be fetched now."""


class SweepError(ConfigError):
    """A sweep spec is invalid or a sweep operation was refused."""

    kind = "sweep"


class SweepNotFound(TunepackError):
    """No sweep with that id on this machine."""

    kind = "sweep"


class ApprovalError(TunepackError):
    """An approval token is unknown, used, expired or bound to other arguments; or the budget refuses."""

    kind = "approval"


class LoopError(TunepackError):
    """A continual-learning cycle cannot run: too little new data, its bound reached, a frozen session in reach."""

    kind = "loop"


class SetupError(TunepackError):
    """``tunepack setup`` cannot add tunepack to a harness config as it is (malformed, or a key in the way)."""

    kind = "setup"


class DiskFullError(TunepackError):
    """A write failed for lack of room (disk full, quota, file-size limit); the store is as it was before."""

    kind = "disk"


_FULL_ERRNOS = (28, 122, 27)  # ENOSPC, EDQUOT, EFBIG
# SQLITE_FULL; SQLITE_IOERR_WRITE (a write(2) refused, e.g. by a file-size limit); SQLITE_IOERR_SHMOPEN and
# _SHMSIZE (no room for a WAL database's shared-memory file, which even a reader needs)
_SQLITE_FULL = (13, 778, 4618, 4874)


def is_disk_full(exc: BaseException) -> bool:
    """True when ``exc`` means a write found no room (ENOSPC, EDQUOT, EFBIG, SQLite's full / write errors)."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    if getattr(exc, "sqlite_errorcode", None) in _SQLITE_FULL:
        return True
    text = str(exc)  # shutil.Error (copytree) keeps only the messages of the errors it collected
    return type(exc).__name__ == "Error" and any(f"[Errno {n}]" in text for n in _FULL_ERRNOS)


@contextlib.contextmanager
def disk_guard(action: str, where: str | os.PathLike, setting: str = "TUNEPACK_HOME") -> Iterator[None]:
    """Turn a write that failed for lack of room into one DiskFullError naming the folder and what to do.
    ``action`` says what was being written; ``setting`` is the variable that moves that folder elsewhere."""
    try:
        yield
    except DiskFullError:
        raise
    except Exception as exc:
        if not is_disk_full(exc):
            raise
        raise DiskFullError(
            f"{action} failed: no room left on the disk holding {where} ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:160]}). Nothing was half-written; what was stored before is intact.",
            f"free space in {where} (or the disk it is on), or set {setting} to a folder on a disk with room; "
            "then retry.") from exc


def require_extra(module: str, extra: str) -> None:
    """Raise MissingExtraError naming the install command when ``module`` cannot be imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(
            f"The Python module '{module}' is not installed in this environment.",
            f"install the extra: pip install torch==2.13.0 && pip install -e '.[{extra}]' "
            f"(or `pip install 'tunepack[{extra}]'`).",
        )


class InputError(TunepackError):
    """An argument no file system or service could use as it is (a path with a NUL byte, a name too long)."""

    kind = "input"


MAX_PATH_BYTES, MAX_PART_BYTES = 4096, 255


def usable_path(value: str | os.PathLike, what: str = "path") -> Path:
    """``value`` as a Path, or InputError when no file could have that name: a NUL byte, more than 4096 bytes, or
    one part (between slashes) longer than 255 bytes."""
    text = str(value)
    if "\x00" in text:
        raise InputError(f"The {what} contains a NUL byte.", f"pass the {what} as plain text, without \\x00.")
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) > MAX_PATH_BYTES or any(len(part) > MAX_PART_BYTES for part in encoded.split(b"/")):
        raise InputError(f"The {what} is {len(text)} characters long; no file can have that name.",
                         f"pass a real {what} (each part at most {MAX_PART_BYTES} bytes, the whole at most "
                         f"{MAX_PATH_BYTES}).")
    return Path(text)


# Errors defined next to the code that raises them, re-exported here so this module lists them all:
# ViewerError carries the Viewer's error codes; the others belong to code that runs inside job scripts
# without the rest of the package (the mask check, the template choice, the eval kit), so they are plain
# Exceptions there and reach the agent as a job's TUNEPACK_ERROR marker.
_ELSEWHERE = {
    "ViewerError": "mcp_server.viewer.backend",
    "MaskCheckError": "mcp_server.train.maskcheck",
    "TemplateChoiceError": "mcp_server.train.chat_templates",
    "KitError": "mcp_server.evals.kit.errors",
    "HeldoutError": "mcp_server.evals.kit.heldout",  # the held-out split, embedded in training and eval scripts
    "ShapingError": "mcp_server.evals.kit.shaping",  # row shaping, embedded likewise
    "ResponseParsingError": "mcp_server.train.response_parsing",  # TRL's tool loop: no tunepack parser for a template
    "VocabMismatch": "mcp_server.methods.distill.vocab_check",  # teacher vs student ids, embedded in the distillation script
    "OpenEnvError": "mcp_server.evals.kit.openenv_env",  # an OpenEnv server that will not start or answer, in GRPO's script
}


def __getattr__(name: str):
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

