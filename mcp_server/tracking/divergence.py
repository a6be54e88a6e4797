"""One divergence rule, for the sweep controller that stops runs and for tracking_summary that flags them.

A run diverges when its loss is not a number, or when it stays above a reference for ``patience`` consecutive logs.
The reference is taken after warmup: logs at learning rate 0, at or before the warmup's last step, and the very
first log (step 1: TRL logs it before the first update) say nothing about where training is heading, so the
reference is the first log after them. "Above" means by more than ``margin`` of the reference: a loss that wobbles
around its start is noise, not divergence.

    verdict = diverging([(step, loss, learning_rate or None), ...], patience=3)
    verdict.kind      # "nan" (deterministic: the same settings fail again) or "rising"; None while healthy
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PATIENCE = 3
MARGIN = 0.1  # 10 % above the reference


@dataclass
class Verdict:
    kind: str | None  # None | "nan" | "rising"
    reason: str = ""
    reference: float | None = None
    reference_step: int | None = None


def _after_warmup(points: list[tuple[int, float, float | None]], warmup_steps: int | None):
    return [(s, v, lr) for s, v, lr in points
            if s > max(1, warmup_steps or 0) and (lr is None or lr > 0)]


def diverging(points: list[tuple[int, float, float | None]], patience: int = PATIENCE, margin: float = MARGIN,
              warmup_steps: int | None = None, name: str = "loss") -> Verdict:
    """The verdict on a series of (step, value, learning rate or None), oldest first."""
    for step, value, _ in points:
        if not math.isfinite(value):
            return Verdict("nan", f"{name} became {value} at step {step}: training diverged numerically")
    kept = _after_warmup(points, warmup_steps)
    if len(kept) <= patience:
        return Verdict(None)
    (ref_step, reference, _), above = kept[0], 0
    for step, value, _ in kept[1:]:
        above = above + 1 if value > reference * (1 + margin) + 1e-12 else 0
        if above >= patience:
            return Verdict("rising", f"{name} stayed more than {margin:.0%} above {reference:.4g} (its value at step "
                           f"{ref_step}, after warmup) for {patience} consecutive logs (now {value:.4g} at step {step})",
                           reference, ref_step)
    return Verdict(None, reference=reference, reference_step=ref_step)
