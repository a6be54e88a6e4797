"""Shared fixtures. State (tunepack home, Trackio) goes to a temp dir set before anything imports
trackio; the tiny model and the full demo are built once per session."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from support.common import REPO, run_cli, short_conversation, write_jsonl  # noqa: F401  (fixtures use them)

_STATE = Path(tempfile.mkdtemp(prefix="tunepack-tests-"))
os.environ["TUNEPACK_HOME"] = str(_STATE / "home")
os.environ["TRACKIO_DIR"] = str(_STATE / "trackio")
os.environ.pop("HF_HUB_OFFLINE", None)  # the Hub stand-in must be reachable; nothing else is
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TUNEPACK_DAILY_TOTAL_USD", "1000")  # one session charges many projects; the cap has its tests
os.environ["TUNEPACK_TOOLSETS"] = "all"  # servers the tests start expose every tool; test_toolsets checks the default

@pytest.fixture
def hub(monkeypatch):
    """A loopback Hub + Jobs stand-in, with HF_ENDPOINT and HF_TOKEN pointing at it. Jobs are only recorded
    (they stay SCHEDULING): tests drive them with ``hub.set_stage`` and ``hub.state.logs``."""
    from support.standin.hub_service import HubStandIn

    with HubStandIn(run_jobs=False) as stand_in:
        monkeypatch.setenv("HF_ENDPOINT", stand_in.endpoint)
        monkeypatch.setenv("HF_TOKEN", stand_in.state.token)
        yield stand_in


@pytest.fixture
def jobs_hub(monkeypatch):
    """The same stand-in, but it executes the jobs it is given (``hub.wait_job``, ``hub.job_log``, ``hub.kill_job``)."""
    from support.standin.hub_service import HubStandIn

    with HubStandIn(run_jobs=True) as stand_in:
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


@pytest.fixture(scope="session")
def demo_run() -> dict:
    """The README's demo (`tunepack run examples/demo.yaml`), run once per session and shared."""
    done = run_cli("run", str(REPO / "examples" / "demo.yaml"), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
