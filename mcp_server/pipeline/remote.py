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
from typing import NamedTuple

from filelock import FileLock

from .. import settings
from ..config import TrainConfig
from ..errors import ConfigError, JobError, TunepackError
from ..hf_auth import permissions
from ..home import home_dir, trackio_dir
from ..jobs import JobBackend, markers
from ..jobs.cache import CachePlan, plan_cache
from ..registry import LocalRegistry, render_card
from ..registry.hub import hub_card, push_card, upload_dataset
from ..tracking import points_from_metric_lines, summarize
from ..tracking.imports import import_curve, merge_attempts
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
    if cfg.tracking.server_url and not settings.secret("TRACKIO_WRITE_TOKEN"):
        raise ConfigError(f"tracking.server_url is {cfg.tracking.server_url}, and Trackio logs to a self-hosted server "
                          "only with its write token.",
                          "export TRACKIO_WRITE_TOKEN (the write_token of the server's write-access URL) in the shell "
                          "that starts tunepack: the job gets it as a secret.")


class RemotePlan(NamedTuple):
    config: TrainConfig  # the config the job trains with: data in the private data repo at its pinned commit
    push: dict  # {repo_id, private}: where the script pushes checkpoints, the adapter and its manifest
    cache: CachePlan  # mounts (base model, data repo, cache bucket) and the cache environment


def prepare_remote(cfg: TrainConfig) -> RemotePlan:
    """Upload local data, choose the output repo, plan the mounts of ``job.cache``."""
    check_remote(cfg)
    who = permissions()
    repo_id = cfg.output.hub_repo_id or f"{who.user}/{cfg.registry_name}"
    push = {"repo_id": repo_id, "private": cfg.output.private}
    remote, data_repo = cfg, None
    if cfg.data.path:
        data_repo = f"{who.user}/tunepack-data-{fingerprint(cfg.data.path, 'data', 0)}"
        revision = upload_dataset(cfg.data.path, data_repo, private=True)
        data = cfg.data.model_copy(update={"path": [], "hub_id": data_repo, "revision": revision, "split": "train"})
        remote = cfg.model_copy(update={"data": data})
    local_model = Path(cfg.model.name).is_dir()
    cache = plan_cache(cfg.job.cache, who.user, model=None if local_model else cfg.model.name,
                       model_revision=cfg.model.revision, data_repo=data_repo,
                       data_revision=remote.data.revision if data_repo else None)
    return RemotePlan(remote, push, cache)


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
    points = curve_of_run(backend, info, found)
    summary = summarize(project, run, points)
    imported = bring_curve_home(manifest, run, points, job_id)
    name = TrainConfig.model_validate(manifest["config"]).registry_name
    registry = LocalRegistry()
    entry = next((v for v in registry.list(name) if v.job_id == job_id), None) or registry.record_remote(
        name, manifest=manifest, hub_repo=last["hub_repo"], hub_commit=last["hub_commit"], run_name=run, job_id=job_id,
        card=lambda version: render_card(manifest, summary, name=name, version=version))
    card = Path(entry.card_path).read_text(encoding="utf-8")
    card_commit = push_card(last["hub_repo"], hub_card(card, manifest, name, repo_id=last["hub_repo"]))
    result = {"run_name": run, "registry_name": entry.name, "registry_version": entry.version,
              "adapter_path": entry.path, "card_path": entry.card_path, "hub_repo": last["hub_repo"],
              "hub_commit": last["hub_commit"], "card_commit": card_commit, "steps": last["steps"],
              "first_loss": last["first_loss"], "last_loss": last["last_loss"], "trackio": imported,
              "finished_at": time.time()}
    tasks = (manifest["config"].get("eval") or {}).get("tasks") or []
    if tasks:  # an HF training job trains and pushes; the eval is a job of its own, never skipped unsaid
        result["eval"] = {"tasks": tasks, "ran": False, "next_step": (
            f"the config's eval.tasks ({', '.join(tasks)}) run as their own job after an HF training run: "
            f"eval_start(name='{entry.name}', version={entry.version}, backend='hf', flavor='{info.flavor}') "
            "(paid, quoted), or backend='local' on this machine; the results go to the Hub card too")}
    return result


def curve_of_run(backend: JobBackend, info, found: dict) -> list:
    """The run's metric points over all its attempts (jobs with the same run label, oldest first): a retry that
    resumed from a pushed checkpoint logged only the steps after it, and re-logged a few the killed one had."""
    run = info.labels.get("run")
    try:
        jobs = [j for j in backend.list(labels={"run": run}) if j.id != info.id] if run else []
    except TunepackError:
        jobs = []
    attempts = [points_from_metric_lines(markers.parse(backend.logs(j.id)).get("METRIC", []))
                for j in sorted(jobs, key=lambda j: j.created_at) if j.created_at <= info.created_at]
    return merge_attempts([*attempts, points_from_metric_lines(found.get("METRIC", []))])


def bring_curve_home(manifest: dict, run: str, points: list, job_id: str) -> dict:
    """Where the run's curve is: on the Space / Trackio server the job logged to, or imported now into the local
    Trackio project (one value per step), so `trackio show` shows remote runs beside local ones."""
    tracking = manifest["config"]["tracking"]
    project = tracking["project"]
    if tracking.get("space_id") or tracking.get("server_url"):
        where = f"Space {tracking['space_id']}" if tracking.get("space_id") else f"server {tracking['server_url']}"
        return {"project": project, "run": run, "where": where, "imported_steps": 0}
    written = import_curve(project, run, points, config={"tunepack_job": job_id, **manifest["config"]})
    return {"project": project, "run": run, "where": f"local Trackio ({trackio_dir()})", "imported_steps": written,
            "steps": len(points)}
