"""Verified rollouts only (the ladder's last rung: rejection sampling): of the sessions a GRPO run in the coding
environment wrote (Pi sessions whose ``tunepack.rollout`` entry records the reward and the hidden tests'
verdict), keep the ones whose hidden tests all passed, drop exact repeats of a problem's trajectory, and keep at
most ``per_problem`` per problem (the highest rewards first, then the earliest steps), so a few easy problems do
not fill the SFT data.

    kept, counts, lineage = verified_sources(sources, per_problem=4)

Only training rollouts are candidates: a rollout of the held-out curve (split ``eval``) or of an eval task (split
``test``, mbpp-agent) is counted under ``heldout`` and never kept, even when the whole ``rollouts/`` folder is given
— training on the problems that measure the run would make the measure meaningless.

``counts``: rollouts seen, not rollouts, held out, failed, repeats, over the cap, kept, problems; ``lineage``: the
run the rollouts came from (its own lineage: base → sft → ... → grpo), recorded in the SFT run's manifest and card.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

from ..evals.kit.rollouts import training_rollouts


def _trajectory_key(path: Path) -> str:
    """The conversation of a rollout (messages only, no ids or times): equal for exact repeats."""
    parts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("type") == "message":
            message = entry["message"]
            parts.append([message.get("role"), message.get("content")])
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def verified_sources(sources: list[tuple[str, Path]], per_problem: int | None = 4
                     ) -> tuple[list[tuple[str, Path]], dict, list[dict]]:
    """The (format, path) sources to convert, the counts, and the lineage of the run that wrote them."""
    counts = {"rollouts": 0, "not_rollouts": 0, "heldout": 0, "failed": 0, "repeats": 0, "over_cap": 0, "kept": 0,
              "problems": 0}
    by_problem: dict[str, list[tuple[float, int, str, Path, str]]] = defaultdict(list)
    lineage: list[dict] = []
    for (fmt, path), meta in training_rollouts(sources, counts):
        if not meta.get("verified"):
            counts["failed"] += 1
            continue
        lineage = lineage or list(meta.get("lineage") or [])
        step = int(meta["step"]) if isinstance(meta.get("step"), int) else 0
        by_problem[str(meta.get("problem"))].append((-float(meta.get("reward") or 0.0), step, fmt, Path(path),
                                                     str(meta.get("split"))))
    kept: list[tuple[str, Path]] = []
    for _problem, found in sorted(by_problem.items()):
        seen: set[str] = set()
        chosen = 0
        for _, _, fmt, path, _ in sorted(found, key=lambda f: (f[0], f[1], str(f[3]))):
            key = _trajectory_key(path)
            if key in seen:
                counts["repeats"] += 1
                continue
            seen.add(key)
            if per_problem is not None and chosen >= per_problem:
                counts["over_cap"] += 1
                continue
            chosen += 1
            kept.append((fmt, path))
    counts["kept"], counts["problems"] = len(kept), sum(1 for found in by_problem.values() if found)
    return kept, counts, lineage
