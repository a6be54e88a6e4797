"""GRPO's tests reward throughput: MBPP reference solutions (and broken ones) scored assert by assert through
tunepack's sandbox, against a plain subprocess runner (the anchors' way: `python -c` with the code and one
assert, next to whatever the training process holds).

Usage:
    python bench/rewards.py            # MBPP train (../shared), 2 workers, programs per second per core
    python bench/rewards.py --quick    # 12 built-in problems (CI smoke)

Prints programs/s for both and their ratio; every reference must score 1.0 in both and every broken answer
0.0 (the sandbox judges outside the program; the plain runner trusts the exit code).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_server.evals.kit.sandbox import Sandbox  # noqa: E402
from mcp_server.evals.kit.testreward import tests_fraction  # noqa: E402
from mcp_server.methods.grpo.prompts import mbpp_rows  # noqa: E402

SHARED_MBPP = Path(__file__).resolve().parents[2] / "shared" / "data" / "mbpp" / "mbpp.jsonl"
BUILT_IN = [{"id": f"b{i}", "prompt": "", "setup": "", "solution": f"def f(x):\n    return x + {i}",
             "tests": [f"assert f(1) == {1 + i}", f"assert f(0) == {i}", f"assert f(-1) == {i - 1}"]}
            for i in range(12)]


def plain_fraction(row: dict, answer: str) -> float:
    """One `python -c` per assert with the answer in front: pass = exit code 0 (forgeable by the answer)."""
    passed = 0
    for test in row["tests"]:
        program = f"{answer}\n{row.get('setup') or ''}\n{test}\n"
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=10)
        passed += done.returncode == 0
    return passed / len(row["tests"])


def timed(score, rows, answers, workers: int) -> tuple[float, list[float]]:
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        scores = list(pool.map(lambda pair: score(*pair), zip(rows, answers, strict=True)))
    return time.perf_counter() - started, scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    rows = BUILT_IN if args.quick or not SHARED_MBPP.is_file() else mbpp_rows(SHARED_MBPP, "train")
    references = [f"```python\n{r['solution']}\n```" for r in rows]
    broken = ["def nothing():\n    pass"] * len(rows)
    programs = sum(len(r["tests"]) for r in rows)
    box = Sandbox("auto", workers=args.workers).start()
    try:
        sandbox_s, sandbox_ref = timed(lambda r, a: tests_fraction(box, r, a), rows, references, args.workers)
        _, sandbox_broken = timed(lambda r, a: tests_fraction(box, r, a), rows, broken, args.workers)
        mode = box.mode
    finally:
        box.close()
    plain_s, plain_ref = timed(plain_fraction, rows, [r["solution"] for r in rows], args.workers)
    source = "built-in" if rows is BUILT_IN else "MBPP train"
    print(f"{source}: {len(rows)} problems, {programs} programs (one per assert), {args.workers} workers")
    print(f"sandbox ({mode}): {programs / sandbox_s:.1f} programs/s = {programs / sandbox_s / args.workers:.1f} per "
          f"core; references scoring 1.0: {sum(s == 1.0 for s in sandbox_ref)}/{len(rows)}; broken scoring 0.0: "
          f"{sum(s == 0.0 for s in sandbox_broken)}/{len(rows)}")
    print(f"plain subprocess: {programs / plain_s:.1f} programs/s = {programs / plain_s / args.workers:.1f} per core; "
          f"references scoring 1.0: {sum(s == 1.0 for s in plain_ref)}/{len(rows)}")
    print(f"ratio sandbox / plain: {plain_s / sandbox_s:.2f}x the plain runner's throughput")
    ok = all(s == 0.0 for s in sandbox_broken) and (rows is not BUILT_IN or all(s == 1.0 for s in sandbox_ref))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
