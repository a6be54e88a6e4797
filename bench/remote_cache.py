"""What the shared cache saves in a sweep on HF Jobs, measured on the executing Jobs + Hub stand-in
(tests/support/standin): N training jobs of the tutorial's CPU twin (the Gemma 4 replica under its Hub id, Pi
sessions from a Hub dataset repo), run at once like a sweep, with ``job.cache: auto`` and with ``none``. Prints,
per mode, the base model's weight downloads over HTTP, the mounts, the package installs (uv shim) and the wall
time. Asserts nothing about speed.

Usage:
    python bench/remote_cache.py            # a 3-run sweep per mode
    python bench/remote_cache.py --quick    # 2 runs per mode, 2 steps (CI)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]


def replica(folder: Path) -> Path:
    from support.tutorial import cpu_twin, write_sessions

    from mcp_server.config import load_config
    from mcp_server.traces.spine import training_config
    from mcp_server.train.tiny_model import TINY_VOCAB, build_tiny_model

    cfg = training_config(load_config(cpu_twin(write_sessions(folder / "sessions"), "replica", folder)), folder / "rows")
    return build_tiny_model(cfg.data.path, folder / "gemma-4-E2B-it", arch="gemma4", vocab_size=TINY_VOCAB)


def sweep(mode: str, runs: int, steps: int, model: Path, folder: Path) -> dict:
    """``runs`` jobs submitted together on a fresh Hub; what they fetched and installed."""
    from support.remote import GEMMA, hf_twin, seed_folder, seed_sessions
    from support.standin.hub_service import HubStandIn

    from mcp_server.approval import Consent
    from mcp_server.config import load_config
    from mcp_server.jobs import get_backend
    from mcp_server.pipeline import start_pipeline

    started_at = time.time()
    with HubStandIn() as hub:
        os.environ.update(HF_ENDPOINT=hub.endpoint, HF_TOKEN=hub.state.token)
        seed_folder(hub, GEMMA, model)
        seed_sessions(hub, folder)
        jobs = []
        for i in range(runs):
            project = f"cache-{mode}-{i}"
            cfg = load_config(hf_twin(folder, project, steps=steps, save_steps=None, cache=mode, flavor="cpu-basic",
                                      training={"learning_rate": 0.01 / (i + 1)}))
            jobs.append(start_pipeline(cfg, backend=get_backend("hf"), timeout_s=3600, flavor="cpu-basic",
                                       consent=Consent.keyboard()).job.id)
        stages = [hub.wait_job(j, timeout=900)["status"]["stage"] for j in jobs]
        weights = sum(n for (repo, path), n in hub.state.downloads.items()
                      if repo == GEMMA and path.endswith(".safetensors"))
        model_files = sum(n for (repo, _), n in hub.state.downloads.items() if repo == GEMMA)
        return {"mode": mode, "runs": runs, "completed": stages.count("COMPLETED"), "weight_downloads": weights,
                "model_file_downloads": model_files,
                "model_mounts": sum(1 for m in hub.state.mounts if m["repo"] == GEMMA),
                "installs": sum(1 for i in hub.state.installs if i["installed"]),
                "reused_installs": sum(1 for i in hub.state.installs if not i["installed"]),
                "wall_s": round(time.time() - started_at, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 runs per mode, 2 steps")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tunepack-bench-cache-"))
    os.environ.setdefault("TUNEPACK_HOME", str(scratch / "home"))
    os.environ.setdefault("TRACKIO_DIR", str(scratch / "trackio"))
    runs, steps = (2, 2) if args.quick else (3, 4)
    model = replica(scratch / "replica")
    rows = [sweep(mode, runs, steps, model, scratch / mode) for mode in ("auto", "none")]
    print(f"| job.cache | runs | completed | weight downloads | model file downloads | model mounts | package "
          f"installs | reused | wall s |\n|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['runs']} | {r['completed']} | {r['weight_downloads']} | {r['model_file_downloads']} "
              f"| {r['model_mounts']} | {r['installs']} | {r['reused_installs']} | {r['wall_s']} |")
    if any(r["completed"] != r["runs"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
