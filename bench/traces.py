"""Benchmark trace conversion: MB of session files converted per minute per core (target ≥ 50).

Converts the two large Pi sessions of the shared test data (about 1 MB each, real sessions) into
conversation rows — read, rebuild the branch, pair tool calls, redact, infer tool schemas, write the
JSON Lines atomically — in one process, and prints the figures. Asserts nothing about speed.

Usage:
    python bench/traces.py            # 5 rounds over the shared Pi sessions (../shared/data/traces/pi)
    python bench/traces.py --quick    # 1 round, for CI (seconds); falls back to a generated session
                                      # when ../shared is absent
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED_PI = REPO.parent / "shared" / "data" / "traces" / "pi"
LARGE = ("pi-mono__large-session.v1.jsonl", "pi-mono__session-d5dde00.v1.jsonl")


def generated_session(path: Path, turns: int = 400) -> Path:
    """A synthetic v3 Pi session of about 1 MB: user, tool-calling assistant turns, results, answers."""
    lines = [{"type": "session", "version": 3, "id": "bench", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/tmp"}]
    parent = None
    for i in range(turns):
        for kind, message in (
            ("u", {"role": "user", "content": [{"type": "text", "text": f"Step {i}: check module {i} and fix it."}]}),
            ("a", {"role": "assistant", "stopReason": "toolUse", "model": "bench-model", "content": [
                {"type": "thinking", "thinking": "Read the file first. " * 8},
                {"type": "toolCall", "id": f"t{i}", "name": "read", "arguments": {"path": f"src/m{i}.py"}}]}),
            ("r", {"role": "toolResult", "toolCallId": f"t{i}", "toolName": "read",
                   "content": [{"type": "text", "text": f"def f{i}(x):\n    return x + {i}\n" * 40}]}),
            ("b", {"role": "assistant", "stopReason": "stop", "model": "bench-model",
                   "content": [{"type": "text", "text": f"Module {i} looks correct. " * 6}]}),
        ):
            entry_id = f"{kind}{i:06d}"
            lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t", "message": message})
            parent = entry_id
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round (CI smoke run)")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tunepack-bench-traces-"))
    os.environ.setdefault("TUNEPACK_HOME", str(scratch / "home"))

    from mcp_server.traces import ConvertOptions, convert

    files = [SHARED_PI / name for name in LARGE if (SHARED_PI / name).is_file()]
    source = "shared Pi sessions"
    if len(files) < len(LARGE):
        if not args.quick:
            print(f"skipped: the shared Pi sessions are not at {SHARED_PI} (run with --quick to use a generated one)")
            return
        files = [generated_session(scratch / "generated.v3.jsonl")]
        source = "generated Pi session (../shared is absent)"
    rounds = args.rounds or (1 if args.quick else 5)
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    timings = []
    report = None
    for n in range(rounds):
        started = time.process_time()  # CPU time of this process: per core
        wall = time.perf_counter()
        report = convert([str(f) for f in files], scratch / f"out-{n}.jsonl", ConvertOptions())
        timings.append((time.process_time() - started, time.perf_counter() - wall))
    cpu = min(t[0] for t in timings)
    wall = min(t[1] for t in timings)
    figures = {
        "mode": "quick" if args.quick else "full",
        "source": source,
        "files": len(files),
        "input_mb": round(size_mb, 3),
        "rounds": rounds,
        "best_cpu_s": round(cpu, 3),
        "best_wall_s": round(wall, 3),
        "mb_per_min_per_core": round(size_mb / max(cpu, 1e-9) * 60, 1),
        "target_mb_per_min_per_core": 50,
        "rows": report.rows,
        "assistant_turns": report.assistant_turns,
        "tool_calls": report.tool_calls,
    }
    for key, value in figures.items():
        print(f"{key:>28}: {value}")


if __name__ == "__main__":
    main()
