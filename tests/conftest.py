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
# job headers resolve against the index of a fixed day (reproducible); bench/resolve_drift.py names what moved since
os.environ.setdefault("TUNEPACK_RESOLVE_BEFORE", "2026-12-05T00:00:00Z")
os.environ["TUNEPACK_TOOLSETS"] = "all"  # servers the tests start expose every tool; test_toolsets checks the default
if os.environ.get("PYTEST_XDIST_WORKER"):  # two workers share the cores: one torch thread each, no oversubscription
    os.environ.setdefault("OMP_NUM_THREADS", "1")

# Under `pytest -n 2` (the README's command) a file's tests stay on one worker so its module fixtures are built
# once; files sharing a session fixture or a path in the clone share a group (pytest_xdist_make_scheduler below).
_GROUPS = {
    "test_cli.py": "demo", "test_pipeline.py": "demo", "test_skills_commands.py": "demo",  # demo_run, once
    "test_install.py": "wheel", "test_packaging.py": "wheel",  # both build a wheel from the clone
}


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


# The longest groups start first (measured with --durations; the rest keep collection order), so neither worker is
# left with a ten-minute file at the end.
_FIRST = ["test_ladder.py", "test_nextaction_e2e.py", "test_remote_e2e.py", "test_tutorial.py", "test_cli.py", "test_server.py",
          "test_evals_memorisation.py", "test_sweeps_run.py", "test_push_resume.py", "test_preflight.py",
          "test_distill_e2e.py", "test_grpo_e2e.py", "test_grpo.py"]


def pytest_collection_modifyitems(config, items):
    first = {name: n for n, name in enumerate(_FIRST)}
    items.sort(key=lambda item: first.get(item.path.name, len(first)))


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` cannot group under pytest 9 (xdist rewrites a node id attribute pytest no longer has), so
    the grouping is a scheduler: a file's tests, or the files of one _GROUPS entry, go to one worker."""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return _GROUPS.get(path.rsplit("/", 1)[-1], path)

    config.option.loadscopereorder = False  # keep the order above, not "most tests first"
    return ByGroup(config, log)
