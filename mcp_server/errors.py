"""The error hierarchy. Every error says what went wrong *and* what to do next.

The agent is the user: an error that reaches it must be something it can act on. Each error
carries a ``problem`` (what happened, naming the key, file, row or value) and a ``fix`` (the next
step). The CLI prints ``str(error)`` as one line; the MCP server returns it as an error result.
"""

from __future__ import annotations


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


def require_extra(module: str, extra: str) -> None:
    """Raise MissingExtraError naming the install command when ``module`` cannot be imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(
            f"The Python module '{module}' is not installed in this environment.",
            f"install the extra: pip install torch==2.13.0 && pip install -e '.[{extra}]' "
            f"(or `pip install 'tunepack[{extra}]'`).",
        )
