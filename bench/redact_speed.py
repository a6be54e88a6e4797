"""Benchmark secret redaction: MB/s of ``redact_value`` over every string of the shared agent traces.

Reads every JSON / JSON Lines file under ../shared/data/traces (real sessions of five harnesses, about 2.5 MB),
collects every string inside them (what ``traces convert`` and ``traces push`` hand to ``redact_text``), and
times, in one process: the cheap pre-check alone (``might_hold_secret``), and the full redaction of every string
(``redact_value``, which skips a string the pre-check clears), as CPU time of this process. Prints the figures,
the share of strings that needed the full scan, the share of ``traces convert``'s time budget (50 MB/min/core)
that redaction takes, and the redactions by kind. Asserts nothing about speed.

Usage:
    python bench/redact_speed.py            # best of 10 rounds over the shared traces
    python bench/redact_speed.py --quick    # best of 3 (CI: a few seconds); a generated corpus when ../shared
                                            # is absent
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared" / "data" / "traces"
CONVERT_MB_PER_S = 50 / 60


def strings_in(value, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            strings_in(item, out)
    elif isinstance(value, list):
        for item in value:
            strings_in(item, out)


def shared_strings() -> list[str]:
    """Every string value of every JSON document under ../shared/data/traces (a JSONL line is one document)."""
    out: list[str] = []
    decoder = json.JSONDecoder()
    for path in sorted(SHARED.rglob("*.json*")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for line in (text.splitlines() if path.suffix == ".jsonl" else [text]):
            pos, line = 0, line.strip()
            while pos < len(line):  # a glued line holds two documents
                try:
                    value, pos = decoder.raw_decode(line, pos)
                except ValueError:
                    break
                strings_in(value, out)
    return out


def generated_strings(n: int = 4000) -> list[str]:
    """A stand-in corpus: code, prose and logs, a few secret-looking assignments among them."""
    rng = random.Random(7)
    words = ["def", "return", "token", "tokenizer", "model", "path", "load", "config", "self", "error", "value"]
    out = []
    for i in range(n):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(5, 200)))
        if i % 97 == 0:
            body += " api_key=" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(32))
        out.append(body)
    return out


def timed(fn, rounds: int) -> float:
    """Best CPU time of this process over ``rounds`` runs (per core, and steady on a shared machine)."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three rounds (CI smoke run)")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()

    from mcp_server.redact import might_hold_secret, redact_value

    if SHARED.is_dir():
        texts, source = shared_strings(), f"shared traces ({SHARED})"
    elif args.quick:
        texts, source = generated_strings(), "generated text (../shared is absent)"
    else:
        print(f"skipped: the shared traces are not at {SHARED} (run with --quick to use generated text)")
        return
    rounds = args.rounds or (3 if args.quick else 10)
    size_mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    redact_value(texts, Counter())  # warm-up: lazy imports and regex compiles happen outside the timing
    precheck_s = timed(lambda: [might_hold_secret(t) for t in texts], rounds)
    counts: Counter = Counter()
    redact_s = timed(lambda: redact_value(texts, counts.__class__()), rounds)
    redact_value(texts, counts)
    flagged = [t for t in texts if might_hold_secret(t)]
    figures = {
        "mode": "quick" if args.quick else "full",
        "source": source,
        "strings": len(texts),
        "input_mb": round(size_mb, 3),
        "rounds": rounds,
        "precheck_mb_per_s": round(size_mb / max(precheck_s, 1e-9), 1),
        "redact_mb_per_s": round(size_mb / max(redact_s, 1e-9), 1),
        # traces convert's target is 50 MB/min/core (bench/traces.py): the share of it redaction takes
        "share_of_convert": f"{CONVERT_MB_PER_S / max(size_mb / max(redact_s, 1e-9), 1e-9):.1%}",
        "strings_full_scan": f"{len(flagged)} ({sum(len(t) for t in flagged) / max(1, sum(map(len, texts))):.1%} "
                             "of the characters)",
        "redactions": dict(sorted(counts.items())) or "none",
    }
    for key, value in figures.items():
        print(f"{key:>20}: {value}")


if __name__ == "__main__":
    main()
