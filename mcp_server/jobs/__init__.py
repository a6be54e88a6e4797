"""Jobs room: run rendered scripts locally or (later) on HF Jobs behind one interface."""

from ..errors import JobError
from .base import FINAL_STATES, Hardware, JobBackend, JobInfo, JobSpec, failure_error, parse_markers
from .local import LocalBackend

BACKENDS = {"local": LocalBackend}


def get_backend(name: str = "local", **kwargs) -> JobBackend:
    try:
        return BACKENDS[name](**kwargs)
    except KeyError:
        raise JobError(f"Unknown job backend '{name}'.", f"use one of: {', '.join(BACKENDS)}.") from None


__all__ = ["FINAL_STATES", "Hardware", "JobBackend", "JobInfo", "JobSpec", "LocalBackend", "failure_error",
           "get_backend", "parse_markers"]
