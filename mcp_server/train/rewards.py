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
