"""Render an evaluation into one self-contained PEP 723 script (templates/eval_job.py.j2).

The local job runner and HF Jobs run the same file. It embeds the eval spec, the tracking target
and the eval kit's sources (``mcp_server/evals/kit``) with their sha256, so a run's manifest pins
the exact task, scoring and sandbox code that produced its numbers.
"""

from __future__ import annotations

import hashlib
import json
import pprint
import time
from pathlib import Path

import yaml

from .. import __version__
from ..config.eval_section import EvalSection
from ..resources import VLLM_FOR_TRL, embedded_source, render_template, template_path, training_pins
from ..staging import write_text_atomically

KIT_DIR = Path(__file__).resolve().parent / "kit"
KIT_FILES = (
    "__init__.py", "errors.py", "sandbox_child.py", "nsroot.py", "probe.py", "confine.py", "harness.py", "sandbox.py",
    "problems.py", "trials.py", "verdict.py", "offline.py", "tasks.py", "contamination.py", "intervals.py", "heldout.py", "shaping.py",
    "gemma_args.py", "toolcalls.py", "progress.py", "turndecode.py", "generate.py", "integrity.py", "nextaction.py",
    "bfcl_values.py", "bfcl_check.py", "bfcl.py", "scorenames.py", "toolruns.py", "runner.py", "testreward.py",
    "toolreward.py", "coding_env.py", "openenv_env.py", "agent_loop.py", "rollouts.py", "agent_task.py",
)
TEMPLATE = "eval_job.py.j2"


def kit_sources() -> dict[str, str]:
    return {name: (KIT_DIR / name).read_text(encoding="utf-8") for name in KIT_FILES}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def eval_pins(backend: str = "auto") -> list[str]:
    extra = yaml.safe_load((Path(__file__).with_name("pins.yaml")).read_text(encoding="utf-8"))
    base = training_pins()
    if backend == "vllm":  # vLLM pins its own torch; let the resolver pick it
        base = [p for p in base if not p.startswith(("torch==", "bitsandbytes=="))] + [VLLM_FOR_TRL]
    return [p for p in base if not p.startswith("trl==")] + list(extra)


def next_action_spec(manifest: dict | None, train_data: list[str]) -> dict | None:
    """What next-action needs from the run: its training rows, the held-out record, max_length, the shaping."""
    if not manifest:
        return None
    config = manifest.get("config") or {}
    return {"train_data": list(train_data), "heldout": manifest.get("heldout"),
            "max_length": (config.get("training") or {}).get("max_length"), "shaping": manifest.get("shaping_template")}


def expected_model(manifest: dict | None) -> dict | None:
    """What the evaluated adapter must be: the base, revision and chat template the run recorded."""
    if not manifest:
        return None
    model = (manifest.get("config") or {}).get("model") or {}
    teacher = (manifest.get("distillation") or {}).get("teacher") or {}
    start = manifest.get("start") or (manifest.get("grpo") or {}).get("start") or {}
    return {"base": manifest.get("model_path") or model.get("name"), "revision": model.get("revision"),
            "template_sha256": manifest.get("chat_template_sha256"),
            # a distilled run: the teacher it learnt from is the only teacher its eval compares with
            "teacher": {"base": teacher["base"], "adapter": teacher.get("adapter")} if teacher else None,
            # a run from a registered adapter: that adapter (its folder, or its Hub repo at the commit)
            "start": {k: start.get(k) for k in ("base", "adapter", "hub_repo", "hub_commit")} if start else None}


def build_spec(ev: EvalSection, models: list[dict], train_data: list[str], manifest: dict | None = None,
               next_action: dict | None = None) -> dict:
    """The kit's run spec from the config's eval section, the models, the training files and the run manifest;
    ``next_action``: what next-action scores when it is not the run's own held-out sessions (an earlier rung's:
    ``next_action_spec(that manifest, its training files)``)."""
    return {
        "tasks": list(ev.tasks), "limit": ev.limit, "samples": ev.samples, "temperature": ev.temperature,
        "max_tokens": ev.max_tokens, "sandbox": ev.sandbox, "timeout_s": ev.timeout_s, "memory_mb": ev.memory_mb,
        "mbpp_source": ev.mbpp_source, "backend": ev.backend, "models": models, "train_data": list(train_data),
        "allow_contaminated": ev.allow_contaminated, "ngram": ev.ngram, "min_overlap": ev.min_overlap,
        "ids": list(ev.ids), "bfcl_source": ev.bfcl_source,
        "next_action": next_action or next_action_spec(manifest, train_data),
        "expected": expected_model(manifest),
    }


def render_eval_script(spec: dict, *, tracking: dict | None = None) -> tuple[str, dict]:
    """(script text, render info). ``tracking`` = {project, run[, space_id]} or None."""
    kit = kit_sources()
    info = {
        "tunepack_version": __version__,
        "rendered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "template_sha256": sha256(template_path(TEMPLATE).read_text(encoding="utf-8")),
        "spec_sha256": sha256(json.dumps(spec, sort_keys=True, default=str)),
        "kit": {name: sha256(src) for name, src in kit.items()},
    }
    text = render_template(
        TEMPLATE,
        pins=eval_pins(spec.get("backend", "auto")),
        tunepack_version=__version__,
        task_list=", ".join(Path(t).name for t in spec["tasks"]),
        model_list=" and ".join(m["label"] for m in spec["models"]),
        spec_literal=pprint.pformat(spec, sort_dicts=False, width=100),
        tracking_literal=pprint.pformat(tracking, sort_dicts=False, width=100),
        render_literal=pprint.pformat(info, sort_dicts=False, width=100),
        kit_literal=pprint.pformat(kit, sort_dicts=False, width=100),
        markers_source=embedded_source("jobs/markers.py"),
    )
    info["script_sha256"] = sha256(text)
    return text, info


def write_eval_script(spec: dict, out: str | Path, *, tracking: dict | None = None) -> tuple[Path, dict]:
    """Write the script atomically; returns (path, render info)."""
    out = Path(out)
    text, info = render_eval_script(spec, tracking=tracking)
    write_text_atomically(out, text)
    return out, info
