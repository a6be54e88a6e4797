"""GRPO's built-in rewards (standard library only; the GRPO script embeds this file).

Each reward maps one completion's text (and its token count) to a score in [0, 1]; a run combines them as
a weighted sum (grpo.rewards: name -> weight) and logs every component on its own, so a rising total can
always be traced to the part that rose.

- ``format``: 1 when the completion is exactly one fenced code block (optionally with a language tag) and
  nothing but white space around it, 0.5 when it holds one fenced block among other text, else 0;
- ``length``: 1 - |tokens - target| / target, floored at 0 (the tutorial's minimal, learnable demo).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

FENCE = re.compile(r"```[A-Za-z0-9_+-]*\n(.*?)```", re.S)


def format_reward(text: str) -> float:
    blocks = FENCE.findall(text)
    if len(blocks) != 1 or not blocks[0].strip():
        return 0.0
    return 1.0 if FENCE.sub("", text).strip() == "" else 0.5


def length_reward(tokens: int, target: int) -> float:
    return max(0.0, 1.0 - abs(tokens - target) / target)


def score(name: str, text: str, tokens: int, target: int) -> float:
    if name == "format":
        return format_reward(text)
    if name == "length":
        return length_reward(tokens, target)
    raise ValueError(f"unknown reward {name!r}")


def combined(weights: dict[str, float], parts: dict[str, float]) -> float:
    return sum(weights[name] * parts[name] for name in weights)


def mean_and_stderr(values: Sequence[float]) -> tuple[float, float]:
    """The mean and its standard error (0 for fewer than two values)."""
    n = len(values)
    if not n:
        return 0.0, 0.0
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)


PINNED = 0.95  # completions cut at max_completion_length in at least this share of a step's completions
FLAT = 0.9  # groups whose completions all scored alike (no advantage, no signal)
RECENT = 3  # logs a sign must hold for


def hacking_signs(records: Sequence[dict]) -> str | None:
    """Why a GRPO run looks like it games its reward, from its metric records (TUNEPACK_METRIC lines), or None:
    - the trained reward rose while the held-out reward (``eval/reward``) or a monitor's held-out curve
      (``eval/monitor/<name>``: a reward logged, not trained) fell by more than two standard errors;
    - the held-out reward rose by more than two standard errors over 3 or more evaluations while a monitor did
      not rise at all: the trained reward pays for something the real measure does not see;
    - completion length became pinned at max_completion_length (clipped in >= 95 % for the last 3 logs, having
      been lower before);
    - nearly every group became flat (>= 90 % of groups with zero reward variance for the last 3 logs, having
      been lower before): no signal is left to learn from."""
    train = [r["reward"] for r in records if "reward" in r]
    if len(train) >= 2 * RECENT:
        rose = sum(train[-RECENT:]) / RECENT - sum(train[:RECENT]) / RECENT
        for real in _held_out_keys(records):
            reason = _fell(records, real, rose) or _unmoved(records, real)
            if reason:
                return reason
    for key, limit, what in (("completions/clipped_ratio", PINNED, "completion length is pinned at "
                              "max_completion_length"),
                             ("frac_reward_zero_std", FLAT, "nearly every group has zero reward variance")):
        values = [r[key] for r in records if key in r]
        if len(values) > RECENT and all(v >= limit for v in values[-RECENT:]) and min(values[:-RECENT]) < limit:
            return f"{what} ({key} {values[-1]:.2f} for the last {RECENT} logs, {min(values[:-RECENT]):.2f} before)"
    return None


MONITOR_PREFIX = "eval/monitor/"


def _held_out_keys(records: Sequence[dict]) -> list[str]:
    """eval/reward, then each monitor's held-out curve, in the order they first appear."""
    keys = {k: None for r in records for k in r if k.startswith(MONITOR_PREFIX) and not k.endswith("_stderr")}
    return ["eval/reward", *keys]


def _spread(first: dict, last: dict, key: str) -> float:
    """Two standard errors of the difference of two held-out means."""
    return 2 * math.sqrt(first.get(f"{key}_stderr", 0.0) ** 2 + last.get(f"{key}_stderr", 0.0) ** 2)


def _label(key: str) -> str:
    return "held-out reward" if key == "eval/reward" else f"held-out {key[len(MONITOR_PREFIX):]} (a monitor)"


def _fell(records: Sequence[dict], real: str, rose: float) -> str | None:
    evals = [r for r in records if real in r]
    if len(evals) < 2 or rose <= 0:
        return None
    first, last = evals[0], evals[-1]
    if last[real] < first[real] - _spread(first, last, real):
        return (f"the trained reward rose by {rose:.3g} while the {_label(real)} fell from {first[real]:.3g} to "
                f"{last[real]:.3g} (more than 2 standard errors)")
    return None


def _unmoved(records: Sequence[dict], monitor: str) -> str | None:
    if not monitor.startswith(MONITOR_PREFIX):
        return None
    evals = [r for r in records if monitor in r and "eval/reward" in r]
    if len(evals) < RECENT:
        return None
    first, last = evals[0], evals[-1]
    gained = last["eval/reward"] - first["eval/reward"]
    if gained > _spread(first, last, "eval/reward") and last[monitor] <= first[monitor]:
        return (f"the held-out reward rose from {first['eval/reward']:.3g} to {last['eval/reward']:.3g} (more than 2 "
                f"standard errors) while the {_label(monitor)} did not rise ({first[monitor]:.3g} -> "
                f"{last[monitor]:.3g}): the trained reward pays for something the real measure does not see")
    return None


MIXED_FLOOR = 0.10  # below this share of groups with mixed rewards, GRPO has (almost) nothing to learn from


def group_signal(scores: Sequence[float], group: int) -> dict:
    """Mean reward and the share of groups (``group`` consecutive completions of one prompt) whose rewards
    differ: a flat group gives every completion the same advantage, zero."""
    groups = [scores[i:i + group] for i in range(0, len(scores), group)]
    mixed = sum(1 for g in groups if max(g) - min(g) > 1e-9)
    return {"groups": len(groups), "mixed": mixed, "mixed_share": round(mixed / len(groups), 4) if groups else 0.0,
            "mean_reward": round(sum(scores) / len(scores), 5) if scores else 0.0}
