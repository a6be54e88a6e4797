"""The pipeline on a remote backend (HF Jobs), where the job machine is ephemeral.

Before submitting: the local training files go to a private dataset repo and the script is
rendered against ``repo@revision``; the script pushes checkpoints, the adapter and its manifest to
a private output repo as it trains (so a retried job resumes); the timeout is bounded and checked.
After the job: ``finish_remote`` records the Hub repo + commit in the registry and replaces the
repo's card with tunepack's (ModelCard metadata, training table, manifest) — once, idempotently.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from filelock import FileLock

from ..config import TrainConfig
from ..errors import ConfigError, JobError
from ..hf_auth import permissions
from ..home import home_dir
from ..jobs import JobBackend, markers
from ..registry import LocalRegistry, render_card
from ..registry.hub import hub_card, push_card, upload_dataset
from ..tracking import points_from_metric_lines, summarize
from ..train.tiny_model import fingerprint

MIN_TRAIN_TIMEOUT_S = 1800
# Rough QLoRA throughput for a ~1B model, tokens per second; the estimate says it is rough.
TOKENS_PER_S = {"t4": 1500, "l4": 2500, "a10g": 3000, "l40s": 5000, "a100": 8000, "h200": 15000, "cpu": 150}


def expected_seconds(cfg: TrainConfig, rows: int, avg_tokens: float, flavor: str | None) -> float:
    family = next((k for k in TOKENS_PER_S if (flavor or "cpu").startswith(k)), "cpu")
    if cfg.training.max_steps > 0:
        tokens = cfg.training.max_steps * cfg.training.per_device_train_batch_size \
            * cfg.training.gradient_accumulation_steps * min(avg_tokens, cfg.training.max_length)
    else:
        tokens = rows * min(avg_tokens, cfg.training.max_length) * cfg.training.num_train_epochs
    return tokens / TOKENS_PER_S[family] + 600  # plus set-up: image pull, install, model download


def suggest_timeout_s(cfg: TrainConfig, rows: int, avg_tokens: float, flavor: str | None) -> int:
    """Expected time plus 30 %, rounded up to 10 minutes, never under the 30-minute floor."""
    seconds = expected_seconds(cfg, rows, avg_tokens, flavor) * 1.3
    return max(MIN_TRAIN_TIMEOUT_S, int(math.ceil(seconds / 600) * 600))


def check_timeout(timeout_s: int | None, suggested: int, force: bool) -> int:
    if timeout_s is None:
        raise JobError("A training job on HF Jobs needs a timeout (the default 30 minutes kills most runs).",
                       f"pass timeout_s={suggested} (the estimate plus 30 %), or set job.timeout_s in the config.")
    if timeout_s < MIN_TRAIN_TIMEOUT_S and not force:
        raise JobError(f"timeout_s={timeout_s} is under 30 minutes, which kills most training jobs before they save.",
                       f"use timeout_s={suggested} (the estimate plus 30 %), or pass force=true for a short smoke job.")
    return timeout_s


def check_remote(cfg: TrainConfig) -> None:
    """What a remote run cannot do, refused before any quote."""
    if cfg.model.is_tiny:
        raise ConfigError(f"model.name '{cfg.model.name}' is built on this machine and cannot run on HF Jobs.",
                          "use a Hub model id (e.g. Qwen/Qwen3-0.6B) for remote jobs, or the local backend.")


def prepare_remote(cfg: TrainConfig) -> tuple[TrainConfig, dict]:
    """Upload local data, choose the output repo; return (config for the job, push target)."""
    check_remote(cfg)
    who = permissions()
    repo_id = cfg.output.hub_repo_id or f"{who.user}/{cfg.registry_name}"
    push = {"repo_id": repo_id, "private": cfg.output.private}
    remote = cfg
    if cfg.data.path:
        data_repo = f"{who.user}/tunepack-data-{fingerprint(cfg.data.path, 'data', 0)}"
        revision = upload_dataset(cfg.data.path, data_repo, private=True)
        data = cfg.data.model_copy(update={"path": [], "hub_id": data_repo, "revision": revision, "split": "train"})
        remote = cfg.model_copy(update={"data": data})
    return remote, push


def finish_remote(backend: JobBackend, job_id: str) -> dict | None:
    """Record a completed remote training job in the registry and publish tunepack's card (once)."""
    info = backend.status(job_id)
    if info.stage != "COMPLETED" or info.labels.get("stage") != "train":
        return None
    marker = home_dir("runs", info.labels.get("run", job_id)) / f"finished-{job_id}.json"
    with FileLock(str(marker) + ".lock", timeout=120):  # once, whoever looks (the server, a sweep controller)
        if marker.is_file():
            return json.loads(marker.read_text())
        result = _record_remote_run(backend, info, job_id)
        tmp = marker.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=2))
        os.replace(tmp, marker)  # a process killed mid-write leaves no half marker
    return result


def _record_remote_run(backend: JobBackend, info, job_id: str) -> dict:
    """Record a finished remote run in the registry (reusing the version a killed earlier attempt recorded) and
    push its card."""
    found = markers.parse(backend.logs(job_id))
    done = [d for d in found.get("DONE", []) if d.get("hub_repo")]
    if not done:
        raise JobError(f"Job {job_id} completed but printed no TUNEPACK_DONE line with a Hub repo.",
                       "read its logs (jobs_logs); the adapter may not have been pushed.")
    last = done[-1]
    manifest, run = last["manifest"], info.labels.get("run", info.name)
    project = manifest["config"]["tracking"]["project"]
    summary = summarize(project, run, points_from_metric_lines(found.get("METRIC", [])))
    name = TrainConfig.model_validate(manifest["config"]).registry_name
    registry = LocalRegistry()
    entry = next((v for v in registry.list(name) if v.job_id == job_id), None) or registry.record_remote(
        name, manifest=manifest, hub_repo=last["hub_repo"], hub_commit=last["hub_commit"], run_name=run, job_id=job_id,
        card=lambda version: render_card(manifest, summary, name=name, version=version))
    card = Path(entry.card_path).read_text(encoding="utf-8")
    card_commit = push_card(last["hub_repo"], hub_card(card, manifest, name))
    result = {"run_name": run, "registry_name": entry.name, "registry_version": entry.version,
              "adapter_path": entry.path, "card_path": entry.card_path, "hub_repo": last["hub_repo"],
              "hub_commit": last["hub_commit"], "card_commit": card_commit, "steps": last["steps"],
              "first_loss": last["first_loss"], "last_loss": last["last_loss"], "finished_at": time.time()}
    return result
