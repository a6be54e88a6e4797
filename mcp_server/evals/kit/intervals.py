"""A share with its 95 % interval (Wilson score interval: sound at small n and at 0 or 1).

    rate(7, 20) -> {"score": 0.35, "n": 20, "low": 0.181, "high": 0.567}
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(hits: int, n: int) -> dict:
    """{"score", "n", "low", "high"}; score None when nothing was counted."""
    low, high = wilson(hits, n)
    return {"score": round(hits / n, 4) if n else None, "n": n, "low": round(low, 4), "high": round(high, 4)}
