"""Hardware flavors, their hourly prices, and cost estimates (worst case = price × timeout × replicas).

The HF flavor table is data (``flavors.yaml``); the local backend is free.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, Field

from ..errors import JobError
from .base import Hardware

FLAVORS_FILE = Path(__file__).resolve().parent / "flavors.yaml"


@lru_cache(maxsize=1)
def hf_flavors() -> tuple[Hardware, ...]:
    rows = yaml.safe_load(FLAVORS_FILE.read_text(encoding="utf-8"))
    return tuple(Hardware(name=r["name"], description=r["description"], price_per_hour_usd=r["price"],
                          accelerator=r["accelerator"], compute_capability=r.get("compute_capability"))
                 for r in rows)


def flavor_info(backend: str, flavor: str | None) -> Hardware:
    if backend not in ("local", "hf"):
        raise JobError(f"Unknown job backend '{backend}'.", "use 'local' (this machine) or 'hf' (HF Jobs).")
    if backend == "local":
        return Hardware(name="local", description="this machine", price_per_hour_usd=0.0)
    name = flavor or "cpu-basic"
    for hw in hf_flavors():
        if hw.name == name:
            return hw
    known = ", ".join(h.name for h in hf_flavors())
    raise JobError(f"Unknown flavor '{name}' for the {backend} backend.", f"use one of: {known}.")


def gpu_memory_gb(hw: Hardware) -> float | None:
    """The memory of one of the flavor's GPUs ("4x L4 96 GB" -> 24.0), None for CPU flavors and this machine."""
    import re

    found = re.search(r"(\d+(?:\.\d+)?)\s*GB", hw.description)
    count = re.match(r"(\d+)x", hw.accelerator or "")
    if not hw.accelerator or not found:
        return None
    return float(found.group(1)) / (int(count.group(1)) if count else 1)


class CostEstimate(BaseModel):
    backend: str
    flavor: str
    price_per_hour_usd: float
    replicas: int
    timeout_s: int | None
    worst_case_usd: float = Field(description="price × timeout × replicas: what the budget is charged at submit")
    expected_s: float | None = None
    expected_usd: float | None = None
    paid: bool = Field(description="True when the job costs money (needs approval unless CPU-only)")
    needs_approval: bool = Field(description="True for any non-CPU paid flavor")


def estimate(backend: str, flavor: str | None, timeout_s: int | None, replicas: int = 1,
             expected_s: float | None = None) -> CostEstimate:
    hw = flavor_info(backend, flavor)
    price = hw.price_per_hour_usd
    if price > 0 and timeout_s is None:
        raise JobError(f"A job on '{hw.name}' needs a timeout so its worst-case cost is bounded.",
                       "pass timeout_s (seconds); for training use the expected time plus 20–30 %.")
    worst = round(price * (timeout_s or 0) / 3600 * replicas, 4)
    expected = round(price * expected_s / 3600 * replicas, 4) if expected_s else None
    return CostEstimate(backend=backend, flavor=hw.name, price_per_hour_usd=price, replicas=replicas,
                        timeout_s=timeout_s, worst_case_usd=worst, expected_s=expected_s, expected_usd=expected,
                        paid=price > 0, needs_approval=price > 0 and hw.accelerator is not None)
