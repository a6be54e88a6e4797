"""Render a TrainConfig into one self-contained PEP 723 script: SFT (templates/sft_train.py.j2), distillation
(distill_train.py.j2) or GRPO (grpo_train.py.j2), all over the shared helpers (train_common.py.j2).

The script is the unit of work: the local runner and HF Jobs run the same file. It embeds the
config, the render facts and the mask check's source, and pins the library versions tunepack is
tested against (``pins.yaml``).
"""

from __future__ import annotations

import hashlib
import json
import os
import pprint
import subprocess
import tempfile
import time
from pathlib import Path

from .. import __version__
from ..config import TrainConfig
from ..resources import chat_templates, embedded_source, render_template, training_pins
from .chat_templates import pack
from .distributed import extra_dependencies, launch_plan
from .start import start_adapter

HERE = Path(__file__).resolve().parent
# standard-library modules the script carries verbatim: the marker protocol, template choice, mask check, windows, speed,
# the eval sandbox probe (--check-only, the preflight's job, reports what the job's machine offers) and the held-out
# split by session (data.eval_fraction; the eval kit selects the same rows from the manifest's record) and the row
# shaping for the training template (plain chat rows; the eval kit shapes the held-out rows it re-reads alike)
EMBEDDED = ("jobs/markers.py", "train/chat_templates.py", "train/maskcheck.py", "train/windows.py", "train/speed.py",
            "evals/kit/probe.py", "evals/kit/heldout.py", "evals/kit/shaping.py")
# distillation adds the teacher/student vocabulary check and the memory quote (re-judged on the job's GPU)
DISTILL_EMBEDDED = (*EMBEDDED, "train/vocab_check.py", "train/memory.py")
GRPO_EMBEDDED = (*EMBEDDED, "train/rewards.py")  # the built-in rewards
# one script per method (GRPO inside an environment is its own: grpo-env); each includes train_common.py.j2
TEMPLATES = {"sft": "sft_train.py.j2", "distill": "distill_train.py.j2", "grpo": "grpo_train.py.j2",
             "grpo-env": "grpo_env_train.py.j2"}
TEMPLATE = TEMPLATES["sft"]


def script_kind(cfg: TrainConfig) -> str:
    """Which script renders the config: its method, or grpo-env for GRPO inside an environment."""
    return "grpo-env" if cfg.training.method == "grpo" and cfg.environment is not None else cfg.training.method


def pins() -> list[str]:
    return training_pins()


def config_hash(cfg: TrainConfig) -> str:
    """A short stable hash of everything that changes training (labels, ledger, dedup)."""
    canonical = json.dumps(cfg.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _git_commit(cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def run_name_for(cfg: TrainConfig) -> str:
    """tracking.run_name, else a name from the config plus a timestamp (one Trackio run per render)."""
    return cfg.tracking.run_name or f"{cfg.run_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def render_script(cfg: TrainConfig, *, model_path: str | None = None, run_name: str | None = None,
                  push: dict | None = None, mounts: dict | None = None, cache_bucket: str | None = None,
                  distill: dict | None = None) -> str:
    """The script text. ``model_path`` replaces ``model.name`` where it was resolved (tiny models);
    ``push`` ({repo_id, private}) makes the script push checkpoints and the adapter to the Hub; ``mounts``
    ({model, data, cache}: paths inside an HF job, ``jobs/cache.py``) makes it read the model and data there;
    ``distill``: the distillation plan for the job's flavor (``teacher.distill_plan``; default: no GPU known)."""
    run_name = run_name or run_name_for(cfg)
    method = cfg.training.method
    if method == "distill" and distill is None:
        from .teacher import distill_plan

        distill = distill_plan(cfg, gpu_gb=None, cuda=False, flavor=None)
    info = {
        "tunepack_version": __version__,
        "run_name": run_name,
        "registry_name": cfg.registry_name,
        "config_hash": config_hash(cfg),
        "model_path": model_path or cfg.model.name,
        "rendered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": _git_commit(Path.cwd()),
        "push": push,
        "mounts": mounts or None,  # HF job volumes: the base model and data repo (read-only), the cache bucket
        "cache_bucket": cache_bucket,
        "launch": launch_plan(cfg),  # distributed.processes > 1: the script re-runs itself under the launcher
        "traces": _provenance(cfg),  # converted agent sessions: their source (Hub commit, file hashes) and counts
        # one Trackio group per distillation mode: off- and on-policy losses are not on one scale
        "trackio_group": f"distill-{distill['mode']}" if distill else None,
        "distill": distill,
    }
    kit: dict[str, str] = {}
    reward_files: dict[str, str] = {}
    info["start"] = start_adapter(cfg, remote=bool(push))  # model.adapter: the registered adapter trained on
    if method == "grpo":
        kit, reward_files, info["grpo"] = _grpo_parts(cfg)
    if kit:
        info["kit"] = {name: hashlib.sha256(src.encode()).hexdigest() for name, src in kit.items()}
    return render_template(
        TEMPLATES[script_kind(cfg)], kit_literal=pprint.pformat(kit, sort_dicts=False, width=100),
        reward_files_literal=pprint.pformat(reward_files, sort_dicts=False, width=100),
        pins=_grpo_pins(cfg, pins() + extra_dependencies(cfg)),
        tunepack_version=__version__,
        run_name=run_name,
        config_hash=info["config_hash"],
        model_label=cfg.model.name,
        config_literal=pprint.pformat(cfg.model_dump(mode="json"), sort_dicts=False, width=100),
        render_literal=pprint.pformat(info, sort_dicts=False, width=100),
        maskcheck_source=embedded_source(*{"distill": DISTILL_EMBEDDED, "grpo": GRPO_EMBEDDED}.get(method, EMBEDDED)),
        chat_templates_packed=wrapped(pack(chat_templates())),
        chat_template_names=", ".join(sorted(chat_templates())),
    )


def _grpo_pins(cfg: TrainConfig, pinned: list[str]) -> list[str]:
    """grpo.generation vllm: vLLM pins its own torch, so the resolver picks both."""
    if cfg.training.method != "grpo" or cfg.grpo.generation != "vllm":
        return pinned
    return [p for p in pinned if not p.startswith(("torch==", "bitsandbytes=="))] + ["vllm"]


def _grpo_parts(cfg: TrainConfig) -> tuple[dict[str, str], dict[str, str], dict]:
    """(the eval kit's sources when the run needs its sandbox, the reward files' sources, the facts the script
    embeds: monitors and the reward files' paths and hashes)."""
    from .grpo_plan import monitors, needs_kit, reward_hashes, reward_sources

    monitored = monitors(cfg)
    sources = reward_sources(cfg)
    info = {"monitor": monitored, "reward_files": reward_hashes(sources, cfg)}
    if not needs_kit(cfg, monitored):
        return {}, sources, info
    from ..evals.render import kit_sources

    return kit_sources(), sources, info


def _provenance(cfg: TrainConfig) -> dict | None:
    from ..traces.spine import provenance

    return provenance(cfg)


def wrapped(blob: str, width: int = 100) -> str:
    return "\n".join(blob[i:i + width] for i in range(0, len(blob), width))


def write_script(cfg: TrainConfig, out: str | Path, *, model_path: str | None = None,
                 run_name: str | None = None, push: dict | None = None, mounts: dict | None = None,
                 cache_bucket: str | None = None, distill: dict | None = None) -> Path:
    """Write the script atomically (a crash never leaves half a script behind)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = render_script(cfg, model_path=model_path, run_name=run_name, push=push, mounts=mounts,
                         cache_bucket=cache_bucket, distill=distill)
    fd, tmp = tempfile.mkstemp(prefix=".train-", suffix=".py", dir=out.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, out)
    return out
