"""Benchmark the MCP server's start-up and per-call overhead (prints figures; asserts nothing).

Measures, in one run: a bare `python -c "import mcp.server"` process; `tunepack serve` from spawn to
the tools/list answer over stdio (the real MCP client), with the default toolset and with all tools; and the
round trip of a trivial tool (jobs_cost on the local backend, from the jobs toolset). Targets: start-up ≤ 0.4 s above the bare import, per call ≤ 5 ms p50.

Usage:
    python bench/server_startup.py           # 7 cold starts, 300 calls
    python bench/server_startup.py --quick   # 2 cold starts, 30 calls (CI smoke)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]


def bare_import_s() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server"], check=True)
    return time.perf_counter() - started


def server(toolsets: str = "core") -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "serve", "--toolsets", toolsets],
                                 env=os.environ.copy(), cwd=str(REPO))


async def cold_start_s(toolsets: str) -> float:
    started = time.perf_counter()
    async with Client(server(toolsets), mode="legacy") as client:
        tools = (await client.list_tools()).tools
        elapsed = time.perf_counter() - started
    assert len(tools) > 20
    return elapsed


async def call_latencies_ms(n: int) -> list[float]:
    out = []
    async with Client(server("jobs"), mode="legacy") as client:
        for _ in range(5):  # warm up
            await client.call_tool("jobs_cost", {"backend": "local"})
        for _ in range(n):
            started = time.perf_counter()
            result = await client.call_tool("jobs_cost", {"backend": "local"})
            out.append(1000 * (time.perf_counter() - started))
            assert not result.is_error
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TUNEPACK_HOME", tempfile.mkdtemp(prefix="tunepack-bench-"))
    starts, calls = (2, 30) if args.quick else (7, 300)

    bare = statistics.median(bare_import_s() for _ in range(starts))
    cold = statistics.median(anyio.run(cold_start_s, "core") for _ in range(starts))
    cold_all = statistics.median(anyio.run(cold_start_s, "all") for _ in range(starts))
    latencies = sorted(anyio.run(call_latencies_ms, calls))
    figures = {
        "bare `import mcp.server` process (s)": round(bare, 3),
        "serve → tools/list, cold (s)": round(cold, 3),
        "start-up above bare import (s)": round(cold - bare, 3),
        "serve --toolsets all → tools/list (s)": round(cold_all, 3),
        "trivial tool call p50 (ms)": round(latencies[len(latencies) // 2], 2),
        "trivial tool call p95 (ms)": round(latencies[int(len(latencies) * 0.95) - 1], 2),
    }
    for key, value in figures.items():
        print(f"{key:>40}: {value}")


if __name__ == "__main__":
    main()
