"""The agent's context spent on tunepack's tools: what `tools/list` puts in front of the model on every turn.

Starts the MCP server over stdio with each toolset choice (the default `core`, the study server's toolsets, and
`all`) and measures the names, descriptions and input schemas (what every harness sends the model) and the
output schemas as well: characters, and tokens at ~4 characters each (no tokenizer is downloaded). Prints
figures only.

Usage:
    python bench/tools.py            # core, the study server, all
    python bench/tools.py --quick    # the same (it takes seconds)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def measure(toolsets: str) -> dict:
    import anyio
    from mcp import Client, StdioServerParameters

    async def listing():
        params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "serve"],
                                       env={**os.environ, "TUNEPACK_TOOLSETS": toolsets}, cwd=str(REPO))
        async with Client(params) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listing)
    inputs = sum(len(json.dumps({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
                 for t in tools)
    outputs = sum(len(json.dumps(t.output_schema)) for t in tools if t.output_schema)
    return {"toolsets": toolsets, "tools": len(tools), "chars": inputs, "tokens": inputs // 4,
            "chars_with_output_schemas": inputs + outputs, "tokens_with_output_schemas": (inputs + outputs) // 4}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="same as the full run (seconds)")
    parser.parse_args()
    from mcp_server.harness.catalog import STUDY_TOOLSETS

    print(f"{'toolsets':32} {'tools':>5} {'chars':>8} {'≈tokens':>8} {'+output schemas ≈tokens':>24}")
    for toolsets in ("core", ",".join(STUDY_TOOLSETS), "all"):
        m = measure(toolsets)
        print(f"{toolsets:32} {m['tools']:5d} {m['chars']:8d} {m['tokens']:8d} {m['tokens_with_output_schemas']:24d}")
    print("target: the default (core) ≤ 6000 tokens")


if __name__ == "__main__":
    main()
