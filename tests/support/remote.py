"""The world the remote end-to-end tests start from: a Hub (the executing stand-in) that already holds a Gemma 4
replica under the tutorial's model id and a dataset repo of raw Pi sessions, as a user's Hub would, and the
tutorial's config turned into its CPU twin for the hf backend."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

from support.common import REPO
from support.tutorial import session_files

GEMMA = "google/gemma-4-E2B-it"
SESSIONS = "alice/pi-agent-sessions"


def api(hub):
    from huggingface_hub import HfApi

    return HfApi(endpoint=hub.endpoint, token=hub.state.token)


def seed_folder(hub, repo_id: str, folder: Path, repo_type: str = "model") -> str:
    """Upload a local folder as a repo of the stand-in Hub (what its owner pushed long ago); return the commit."""
    client = api(hub)
    client.create_repo(repo_id, repo_type=repo_type, private=False, exist_ok=True)
    return client.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type=repo_type,
                                commit_message="seed").oid


def seed_sessions(hub, tmp_path: Path, count: int = 12) -> str:
    folder = tmp_path / "seed-sessions"
    for name, body in session_files(count).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(body)
    return seed_folder(hub, SESSIONS, folder, "dataset")


def hf_twin(folder: Path, project: str, *, steps: int = 6, save_steps: int | None = 2, cache: str = "auto",
            flavor: str = "a10g-small", **extra) -> Path:
    """examples/gemma4-pi-traces.yaml for the hf backend at CPU size: the replica under the tutorial's model id,
    the sessions from the Hub dataset repo, windows of 192 tokens, a few steps, checkpoints pushed as it trains."""
    raw = yaml.safe_load((REPO / "examples" / "gemma4-pi-traces.yaml").read_text())
    twin = {**raw, "model": {"name": GEMMA}, "quantization": "none",
            "data": {**raw["data"], "hub_id": SESSIONS, "revision": "main", "eval_fraction": 0.2},
            "training": {**raw["training"], "max_steps": steps, "max_length": 192, "per_device_train_batch_size": 4,
                         "gradient_accumulation_steps": 1, "learning_rate": 0.01, "logging_steps": 1,
                         "save_steps": save_steps, "gradient_checkpointing": False},
            "tracking": {"project": project}, "output": {"name": project},
            "job": {"backend": "hf", "flavor": flavor, "timeout_s": 3600, "cache": cache}, "eval": {"tasks": []}}
    for key, value in extra.items():
        twin[key] = {**twin.get(key, {}), **value} if isinstance(value, dict) else value
    path = folder / f"{project}.yaml"
    path.write_text(yaml.safe_dump(twin, sort_keys=False))
    return path


def wait_until(check, timeout: float = 180, every: float = 0.2, what: str = "the condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def repo_json(hub, repo_id: str, path: str) -> dict:
    from huggingface_hub import hf_hub_download

    return json.loads(Path(hf_hub_download(repo_id, path, endpoint=hub.endpoint, token=hub.state.token)).read_text())
