"""Shared fixtures. State (tunepack home, Trackio) goes to a temp dir set before anything imports
trackio; the tiny model and the full demo are built once per session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

_STATE = Path(tempfile.mkdtemp(prefix="tunepack-tests-"))
os.environ["TUNEPACK_HOME"] = str(_STATE / "home")
os.environ["TRACKIO_DIR"] = str(_STATE / "trackio")
os.environ.pop("HF_HUB_OFFLINE", None)  # the Hub stand-in must be reachable; nothing else is
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["TUNEPACK_TOOLSETS"] = "all"  # servers the tests start expose every tool; test_toolsets checks the default

REPO = Path(__file__).resolve().parents[1]
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


@pytest.fixture
def hub(monkeypatch):
    """A loopback Hub + Jobs stand-in, with HF_ENDPOINT and HF_TOKEN pointing at it."""
    from standin.hub_service import HubStandIn

    with HubStandIn() as stand_in:
        monkeypatch.setenv("HF_ENDPOINT", stand_in.endpoint)
        monkeypatch.setenv("HF_TOKEN", stand_in.state.token)
        yield stand_in


@pytest.fixture(scope="session")
def state_dir() -> Path:
    return _STATE


@pytest.fixture(scope="session")
def short_data(state_dir) -> Path:
    return write_jsonl(state_dir / "data" / "short.jsonl", [{"messages": short_conversation(i)} for i in range(32)])


@pytest.fixture(scope="session")
def tiny_model_dir(state_dir, short_data) -> Path:
    from mcp_server.train.tiny_model import build_tiny_model

    return build_tiny_model([str(short_data)], state_dir / "models" / "tiny-qwen3", arch="qwen3", vocab_size=1024)


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def run_cli(*args: str, timeout: int = 900, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcp_server.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())


@pytest.fixture(scope="session")
def demo_run() -> dict:
    """The README's demo (`tunepack run examples/demo.yaml`), run once per session and shared."""
    done = run_cli("run", str(REPO / "examples" / "demo.yaml"), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
