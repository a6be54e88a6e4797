"""Promote or keep, in words and numbers: the candidate replaces the adapter in use only when its paired gain on
the held-out rows (frozen set + this cycle's recent slice) is larger than ``z`` standard errors of the paired
difference, and its loss on the retention set rose by no more than the margin.

    decision = decide(current, candidate, retention_current, retention_candidate, z=1.96, margin=0.05)
"""

from __future__ import annotations

import math


def paired(current: list[float | None], candidate: list[float | None]) -> dict:
    """The paired difference current - candidate (positive: the candidate's loss is lower) over the rows both
    scored: n, mean gain, its standard error and the z it reaches."""
    diffs = [a - b for a, b in zip(current, candidate, strict=True) if a is not None and b is not None]
    n = len(diffs)
    mean = sum(diffs) / n if n else 0.0
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    se = sd / math.sqrt(n) if n else 0.0
    z = mean / se if se > 0 else (math.inf if mean > 0 else 0.0)
    return {"n": n, "gain": round(mean, 6), "se": round(se, 6), "z": round(z, 3) if math.isfinite(z) else None}


def mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 6) if kept else None


def decide(gain: dict, retention_current: float | None, retention_candidate: float | None, *, z: float,
           margin: float) -> tuple[str, str]:
    """("promote" | "keep", the reason with its numbers): every condition that failed is named, retention first."""
    reached = gain["z"] if gain["z"] is not None else (math.inf if gain["gain"] > 0 else 0.0)
    failed = []
    measured = retention_current is not None and retention_candidate is not None
    rose = retention_candidate - retention_current if measured else 0.0  # type: ignore[operator]
    if measured and rose > margin:
        failed.append(f"retention dropped past the margin: the retention set's loss rose {rose:+.4f} nats "
                      f"({retention_current:.4f} -> {retention_candidate:.4f}) > {margin:g}")
    if gain["n"] < 2:
        failed.append(f"only {gain['n']} held-out row(s) scored by both: too few to judge a paired gain")
    elif not reached > z:
        failed.append(f"the gain is not significant: mean paired gain {gain['gain']:+.4f} nats per token over "
                      f"{gain['n']} held-out rows, {gain['se']:.4f} standard error, z {reached:.2f} <= {z:g}")
    if failed:
        return "keep", "; and ".join(failed)
    return "promote", (f"better on the held-out rows: mean paired gain {gain['gain']:+.4f} nats per token over "
                       f"{gain['n']} rows, z {reached:.2f} > {z:g}; retention "
                       + (f"{rose:+.4f} nats (margin {margin:g})" if measured else "not measured"))
