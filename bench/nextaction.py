"""Benchmark the next-action eval: seconds per 100 held-out turns, one by one and in left-padded batches.

Builds the CPU replica of each family (``tiny:llama3``, ``tiny:gemma4``) on agent sessions written by a fixed policy
(tests/support/agent_sessions.py, converted and shaped for the family as `tunepack run` does), holds out 30 % of
the sessions by session, and times the eval's own path (``nextaction.run_model``: context cut, chat template,
greedy generation, the family parser, scoring) on the untrained replica, with batch size 1 and 16. Prints the
figures and the number of turns scored; asserts nothing about speed. The replica is untrained, so the scores are
the floor (its messages parse as no call), not a result.

Usage:
    python bench/nextaction.py            # 100 turns per family and batch size
    python bench/nextaction.py --quick    # 20 turns, llama3 only (CI: about half a minute)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

TEMPLATES = {"llama3": "llama3_2", "gemma4": "gemma4_v5"}


def turns_for(family: str, folder: Path, count: int):
    from mcp_server.evals.kit.heldout import split
    from mcp_server.evals.kit.nextaction import next_action_items
    from mcp_server.traces import ConvertOptions, convert
    from support.agent_sessions import write_sessions

    sessions = write_sessions(folder / "sessions.jsonl", 120, seed=1)
    rows_path = folder / f"rows-{family}.jsonl"
    convert([str(sessions)], rows_path, ConvertOptions(template=TEMPLATES[family]))
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    _, _, record = split(rows, 0.3, seed=0)
    turns, _ = next_action_items(rows, record)
    return rows_path, turns[:count]


def time_family(family: str, count: int, folder: Path) -> list[str]:
    from mcp_server.evals.kit.generate import load_generator
    from mcp_server.evals.kit.nextaction import run_model
    from mcp_server.train.tiny_model import build_tiny_model

    rows_path, turns = turns_for(family, folder, count)
    model_dir = build_tiny_model([str(rows_path)], folder / f"tiny-{family}", arch=family, vocab_size=2048)
    gen = load_generator({"label": "base", "base": str(model_dir)}, backend="hf")
    lines = []
    for batch in (1, 16):
        started = time.perf_counter()
        result = run_model(gen, turns, family, 24, 640, None, batch_size=batch)
        seconds = time.perf_counter() - started
        lines.append(f"{family:7s} batch {batch:2d}: {len(turns)} turns in {seconds:6.1f} s = "
                     f"{100 * seconds / len(turns):6.1f} s per 100 turns (24 new tokens, greedy, CPU; "
                     f"run_model says {result['seconds_per_100_turns']})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 turns, llama3 only")
    args = parser.parse_args()
    count, families = (20, ["llama3"]) if args.quick else (100, ["llama3", "gemma4"])
    print(f"next-action eval speed: {count} held-out turns per family, base replica, transformers on CPU")
    with tempfile.TemporaryDirectory(prefix="tunepack-bench-na-") as tmp:
        for family in families:
            for line in time_family(family, count, Path(tmp) / family):
                print(line, flush=True)


if __name__ == "__main__":
    main()
