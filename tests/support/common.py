"""Constants and helpers the tests share (fixtures stay in tests/conftest.py)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
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


@contextlib.contextmanager
def http_server(*flags: str, env: dict | None = None):
    """``tunepack serve --http`` on a free loopback port with ``flags``: yields (its /mcp URL, the process); stops
    it after. Fails with the server's stderr when it exits or does not listen within a minute."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--http", "--port", str(port), *flags],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env if env is not None else os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()[-2000:]
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def mcp_post(url: str, body: str, session: str | None = None, timeout: float = 30.0) -> tuple[int, dict, str]:
    """POST ``body`` to an MCP HTTP endpoint: the status, the headers (lower-case) and the body (SSE: the data of
    its first event)."""
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers |= {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            status, head, text = reply.status, dict(reply.headers), reply.read().decode()
    except urllib.error.HTTPError as reply:
        status, head, text = reply.code, dict(reply.headers), reply.read().decode()
    if text.startswith("event:") or "\ndata: " in text:
        text = next(line[6:] for line in text.splitlines() if line.startswith("data: ") and line[6:].strip())
    return status, {k.lower(): v for k, v in head.items()}, text

