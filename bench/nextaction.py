"""Benchmark the next-action eval: seconds per 100 held-out turns, the fast scorer beside the plain one.

Builds the Gemma 4 replica (``tiny:gemma4``, untrained: the slowest case, since a random model rarely stops before
max_tokens) on tutorial-shaped Pi sessions (tests/support/tutorial.py: each model turn thinks, says what it does
and calls; results come back; each request ends with an answer and the next arrives as a user message), converted
and shaped for Gemma 4 as `tunepack run` does, holds out 30 % of the sessions by session, and times the eval's own
path (``nextaction.run_model``: context cut to max_length, chat template, greedy decoding stopped at the first call's
end, the family parser, scoring) twice on the same turns:

- fast: each session's prompt read once, every turn reusing the cache of the tokens it shares with the turn before
  (computed: Gemma 4's reasoning is not rendered past a user message), turns batched and refilled as they stop;
- plain: every prompt from scratch, ``generate`` on left-padded batches of 16.

Prints the seconds per 100 turns of each, the decoder's counts (prompt tokens, how many were reused, tokens
generated, forward calls) and how many turns the two wrote differently; asserts nothing about speed. With
``--shared`` the real Pi sessions of ../shared/data/traces/pi are timed too (fast only: plain takes an hour there).

Usage:
    python bench/nextaction.py            # 100 turns, max_tokens 512 (the eval's default), max_length 4096
    python bench/nextaction.py --quick    # 20 turns, max_tokens 64 (CI: about half a minute)
    python bench/nextaction.py --shared   # also 100 held-out turns of the shared Pi sessions
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
SHARED_PI = REPO.parent / "shared" / "data" / "traces" / "pi"


def held_out_turns(source: Path, folder: Path, count: int):
    """(converted rows, the first ``count`` held-out turns) of the sessions in ``source``, shaped for gemma4_v5."""
    from mcp_server.evals.kit.heldout import split
    from mcp_server.evals.kit.nextaction import next_action_items
    from mcp_server.traces import ConvertOptions, convert

    rows_path = folder / f"rows-{source.name}.jsonl"
    convert([str(source)], rows_path, ConvertOptions(template="tunepack:gemma4_v5"))
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    _, _, record = split(rows, 0.3, seed=0)
    turns, _ = next_action_items(rows, record)
    return rows_path, turns[:count]


def timed(gen, turns, engine: str, max_tokens: int, max_length: int) -> dict:
    from mcp_server.evals.kit.nextaction import run_model

    started = time.perf_counter()
    result = run_model(gen, turns, "gemma4", max_tokens, max_length, None, engine=engine)
    result["wall"] = time.perf_counter() - started
    return result


def line(label: str, engine: str, result: dict, turns: int) -> str:
    decode = result.get("decode") or {}
    counts = (f"; {decode['prompt_tokens']} prompt tokens, {decode['reused_tokens']} reused, "
              f"{decode['generated_tokens']} generated, {decode['forward_calls']} forward calls") if decode else ""
    return (f"{label:24s} {engine:5s}: {turns} turns in {result['wall']:6.1f} s = "
            f"{100 * result['wall'] / max(turns, 1):6.1f} s per 100 turns{counts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 turns, max_tokens 64")
    parser.add_argument("--shared", action="store_true", help="also the shared Pi sessions (fast only)")
    args = parser.parse_args()
    count, max_tokens, max_length = (20, 64, 4096) if args.quick else (100, 512, 4096)

    from mcp_server.evals.kit.generate import load_generator
    from mcp_server.train.tiny_model import build_tiny_model
    from support.tutorial import write_agent_sessions

    print(f"next-action eval speed: {count} held-out turns, max_tokens {max_tokens}, max_length {max_length}, "
          "untrained tiny:gemma4 replica, transformers on CPU")
    with tempfile.TemporaryDirectory(prefix="tunepack-bench-na-") as tmp:
        folder = Path(tmp)
        sessions = write_agent_sessions(folder / "tutorial-sessions", 60 if not args.quick else 16)
        rows_path, turns = held_out_turns(sessions, folder, count)
        model = build_tiny_model([str(rows_path)], folder / "tiny-gemma4", arch="gemma4", vocab_size=2048)
        gen = load_generator({"label": "base", "base": str(model)}, backend="hf")
        results = {engine: timed(gen, turns, engine, max_tokens, max_length) for engine in ("fast", "plain")}
        for engine, result in results.items():
            print(line("tutorial-shaped sessions", engine, result, len(turns)), flush=True)
        differ = sum(a != b for a, b in zip(results["fast"]["outputs"], results["plain"]["outputs"], strict=True))
        speedup = results["plain"]["wall"] / max(results["fast"]["wall"], 1e-9)
        print(f"fast is {speedup:.1f}x plain; turns written differently: {differ} of {len(turns)}")
        if args.shared and SHARED_PI.is_dir():
            rows_path, turns = held_out_turns(SHARED_PI, folder, count)
            model = build_tiny_model([str(rows_path)], folder / "tiny-gemma4-pi", arch="gemma4", vocab_size=2048)
            gen = load_generator({"label": "base", "base": str(model)}, backend="hf")
            print(line("shared Pi sessions", "fast", timed(gen, turns, "fast", max_tokens, max_length), len(turns)))


if __name__ == "__main__":
    main()
