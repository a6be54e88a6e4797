"""The shared part of rendering a TrainConfig into one self-contained PEP 723 script: the render facts, the pins,
the embedded helpers and the packed chat templates. Each method brings its own template and parts (methods/:
``Method.script_parts``; ``methods.write_script`` is the entry point): SFT (templates/sft_train.py.j2),
distillation (distill_train.py.j2), GRPO (grpo_train.py.j2) and GRPO in an environment (grpo_env_train.py.j2), all
over the shared helpers (train_common.py.j2).

The script is the unit of work: the local runner and HF Jobs run the same file. It embeds the
config, the render facts and the mask check's source, and pins the library versions tunepack is
tested against (``pins.yaml``).
"""

from __future__ import annotations

import hashlib
import json
import pprint
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..config import TrainConfig
from ..resources import chat_templates, embedded_source, render_template, training_pins
from .chat_templates import pack
from .distributed import extra_dependencies, launch_plan

HERE = Path(__file__).resolve().parent
# standard-library modules the script carries verbatim: the marker protocol, template choice, mask check, the batch
# check (collated batches against TRL's tokenized rows and the mask check), windows, speed,
# the eval sandbox probe (--check-only, the preflight's job, reports what the job's machine offers) and the held-out
# split by session (data.eval_fraction; the eval kit selects the same rows from the manifest's record) and the row
# shaping for the training template (plain chat rows; the eval kit shapes the held-out rows it re-reads alike)
EMBEDDED = ("jobs/markers.py", "train/chat_templates.py", "train/maskcheck.py", "train/batchcheck.py", "train/windows.py",
            "train/speed.py", "evals/kit/probe.py", "evals/kit/heldout.py", "evals/kit/shaping.py")


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


@dataclass
class ScriptParts:
    """What a method puts into its script beside the shared parts (methods/*: ``Method.script_parts``)."""

    template: str  # templates/<method>_train.py.j2, which includes train_common.py.j2
    embedded: tuple[str, ...]  # the package's standard-library modules the script carries verbatim
    info: dict = field(default_factory=dict)  # more RENDER_INFO facts (a starting adapter, the method's plan)
    kit: dict[str, str] = field(default_factory=dict)  # the eval kit's sources, when the script needs its sandbox
    reward_files: dict[str, str] = field(default_factory=dict)  # the user's reward files (GRPO)
    unpinned: tuple[str, ...] = ()  # pins left to the resolver (vLLM pins its own torch)
    extra_pins: tuple[str, ...] = ()


def render(cfg: TrainConfig, parts: ScriptParts, *, model_path: str | None = None, run_name: str | None = None,
           push: dict | None = None, mounts: dict | None = None, cache_bucket: str | None = None,
           traces: dict | None = None, group: str | None = None) -> str:
    """The script text of one method's ``parts``. ``model_path`` replaces ``model.name`` where it was resolved
    (tiny models); ``push`` ({repo_id, private}) makes the script push checkpoints and the adapter to the Hub;
    ``mounts`` ({model, data, cache}: paths inside an HF job, ``jobs/cache.py``) makes it read the model and data
    there; ``traces``: where converted agent sessions came from (their Hub commit, file hashes and counts);
    ``group``: the Trackio group of the run (preflight's smoke logs as ``smoke`` in the run's own project)."""
    run_name = run_name or run_name_for(cfg)
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
        "traces": traces,
        **parts.info,
    }
    group = group or cfg.tracking.group
    if group:
        info["trackio_group"] = group
    if parts.kit:
        info["kit"] = {name: hashlib.sha256(src.encode()).hexdigest() for name, src in parts.kit.items()}
    pinned = [p for p in pins() + extra_dependencies(cfg) if not p.startswith(parts.unpinned)] if parts.unpinned \
        else pins() + extra_dependencies(cfg)
    return render_template(
        parts.template, kit_literal=pprint.pformat(parts.kit, sort_dicts=False, width=100),
        reward_files_literal=pprint.pformat(parts.reward_files, sort_dicts=False, width=100),
        pins=pinned + list(parts.extra_pins),
        tunepack_version=__version__,
        run_name=run_name,
        config_hash=info["config_hash"],
        model_label=cfg.model.name,
        config_literal=pprint.pformat(cfg.model_dump(mode="json"), sort_dicts=False, width=100),
        render_literal=pprint.pformat(info, sort_dicts=False, width=100),
        maskcheck_source=embedded_source(*parts.embedded),
        chat_templates_packed=wrapped(pack(chat_templates())),
        chat_template_names=", ".join(sorted(chat_templates())),
    )


def wrapped(blob: str, width: int = 100) -> str:
    return "\n".join(blob[i:i + width] for i in range(0, len(blob), width))
