"""Preference pairs from a GRPO run in the coding environment: its saved rollouts (Pi sessions under rollouts/ in
the run's output folder, each ending in a ``tunepack.rollout`` entry with the problem, the reward and the hidden
tests' verdict) grouped by problem, and a verified rollout (every hidden test passed) paired with a failed one of
the same problem.

    rows, report = rollout_pairs(["outputs/run/rollouts"], per_problem=4)

As for SFT on verified rollouts (traces/verified.py), only training rollouts are used: those of the held-out curve
(split ``eval``) and of eval tasks (split ``test``) are counted and left out. Exact repeats of a trajectory are
dropped; within a problem the best verified rollouts (highest reward, earliest step) meet the worst failed ones
(lowest reward), at most ``per_problem`` pairs, no rollout used twice. The sessions are read by the same Pi reader
as ``tunepack traces convert`` (redaction included), and each pair is cut where its two answers part (pairs.py).
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path

from ...errors import DataError
from ...evals.kit.rollouts import training_rollouts
from .pairs import cut_pair


def _rollout_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise DataError(f"{raw} does not exist.", "give a GRPO run's output folder (it holds rollouts/) or its "
                            "rollouts/ folder.")
        if path.is_dir() and (path / "rollouts").is_dir():
            path = path / "rollouts"
        files += [path] if path.is_file() else sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    return files


def _conversations(files: list[Path]) -> dict[str, dict]:
    """{file path: {messages, tools}} read by the traces converter (Pi sessions, redacted)."""
    from ...traces.convert import convert
    from ...traces.model import ConvertOptions

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.jsonl"
        convert([str(f) for f in files], out, ConvertOptions(format="pi"), allow_empty=True)
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()] \
            if out.is_file() else []
    found: dict[str, dict] = {}
    for row in rows:
        found.setdefault(str(Path(row["source"]).resolve()), {"messages": row["messages"], "tools": row["tools"]})
    return found


def rollout_pairs(paths: list[str], per_problem: int = 4) -> tuple[list[dict], dict]:
    """(pair rows, report: rollouts seen, held out, verified, failed, repeats, problems with both, pairs)."""
    counts = {"rollouts": 0, "not_rollouts": 0, "heldout": 0, "verified": 0, "failed": 0, "repeats": 0,
              "problems": 0, "problems_paired": 0, "pairs": 0}
    candidates: dict[str, list[tuple[bool, float, int, Path]]] = defaultdict(list)
    for path, meta in training_rollouts(_rollout_files(paths), counts):
        verified = bool(meta.get("verified"))
        counts["verified" if verified else "failed"] += 1
        step = meta["step"] if isinstance(meta.get("step"), int) else 0
        candidates[str(meta.get("problem"))].append((verified, float(meta.get("reward") or 0.0), step, path))
    counts["problems"] = len(candidates)
    if not candidates:
        raise DataError(f"No training rollouts found under {', '.join(paths)} ({counts['rollouts']} rollouts, "
                        f"{counts['heldout']} held out, {counts['not_rollouts']} other files).",
                        "give the output folder of a GRPO run with environment.save_rollouts: true (the default), "
                        "or its rollouts/ folder.")
    conversations = _conversations([c[3] for found in candidates.values() for c in found])
    rows: list[dict] = []
    for problem, found in sorted(candidates.items()):
        good: list[tuple[float, dict, Path]] = []
        bad: list[tuple[float, dict, Path]] = []
        seen: set[str] = set()
        for verified, reward, _step, path in sorted(found, key=lambda c: (-c[1], c[2], str(c[3]))):
            conv = conversations.get(str(path.resolve()))
            if conv is None:
                continue
            key = json.dumps(conv["messages"], sort_keys=True)
            if key in seen:
                counts["repeats"] += 1
                continue
            seen.add(key)
            (good if verified else bad).append((reward, conv, path))
        bad.reverse()  # the lowest rewards first
        made = 0
        for (_, chosen, chosen_path), (_, rejected, rejected_path) in zip(good, bad, strict=False):
            if made >= per_problem:
                break
            row = cut_pair({"prompt": [], "chosen": chosen["messages"], "rejected": rejected["messages"],
                            "tools": chosen["tools"] or rejected["tools"]})
            rows.append({**row, "problem": problem, "chosen_source": chosen_path.name,
                         "rejected_source": rejected_path.name})
            made += 1
        counts["problems_paired"] += bool(made)
        counts["pairs"] += made
    if not rows:
        raise DataError(f"No problem has both a verified and a failed rollout ({counts['verified']} verified, "
                        f"{counts['failed']} failed over {counts['problems']} problems): there is no preference.",
                        "use a run whose problems are sometimes solved (raise grpo.num_generations or the "
                        "temperature), or give pairs you wrote yourself as {prompt, chosen, rejected} rows.")
    return rows, counts


def write_pairs(rows: list[dict], out: str | Path, report: dict) -> Path:
    """The pairs as JSON lines, atomically, with the report beside them (<out stem>.pairs.json; not .stats.json,
    which names a traces conversion's stats)."""
    out = Path(out).expanduser()
    if out.suffix != ".jsonl":
        raise DataError(f"The output '{out}' is not a .jsonl file.", "name it pairs.jsonl (JSON Lines).")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(out)
    out.with_name(out.stem + ".pairs.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return out
