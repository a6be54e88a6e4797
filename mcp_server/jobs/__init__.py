"""Jobs room: run rendered scripts on this machine (local) or on HF Jobs (hf) behind one interface, and
read what they report through the log-marker protocol (markers.py)."""

from ..errors import JobError, TunepackError
from . import markers
from .base import FINAL_STAGES, Hardware, JobBackend, JobInfo, JobSpec, failure_error, progress_of
from .local import LocalBackend
from .pricing import CostEstimate, estimate, flavor_info, gpu_memory_gb, hf_flavors

BACKENDS = {"local": LocalBackend}


def get_backend(name: str = "local", **kwargs) -> JobBackend:
    if name == "hf":
        from .hf import HfBackend  # imports huggingface_hub only when asked for

        return HfBackend(**kwargs)
    try:
        return BACKENDS[name](**kwargs)
    except KeyError:
        raise JobError(f"Unknown job backend '{name}'.", f"use one of: {', '.join([*BACKENDS, 'hf'])}.") from None


def available_hardware(backend: str = "hf") -> list[Hardware]:
    """A backend's flavors with their hourly price: live from HF Jobs when it answers, else the price table."""
    if backend != "hf":
        return get_backend(backend).hardware()
    try:
        return get_backend("hf").hardware()
    except TunepackError:  # no token, no network: tunepack's table of HF flavors
        return list(hf_flavors())


__all__ = ["FINAL_STAGES", "CostEstimate", "Hardware", "JobBackend", "JobInfo", "JobSpec", "LocalBackend",
           "available_hardware", "estimate", "failure_error", "flavor_info", "get_backend", "gpu_memory_gb", "hf_flavors", "markers",
           "progress_of"]
