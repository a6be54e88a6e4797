"""Constants and helpers the tests share (fixtures stay in tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"

TOOLS = [{"type": "function", "function": {
    "name": "bash", "description": "Run a shell command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]


def short_conversation(i: int) -> list[dict]:
    """System, user, assistant tool call, tool result, assistant answer — short enough for 128 tokens."""
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Run the tests in pkg{i}."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "bash", "arguments": {"command": f"pytest pkg{i}"}}}]},
        {"role": "tool", "name": "bash", "content": f"{i % 5 + 1} passed"},
        {"role": "assistant", "content": f"All {i % 5 + 1} tests in pkg{i} pass."},
    ]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run_cli(*args: str, timeout: int = 900, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcp_server.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())
