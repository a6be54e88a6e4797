"""The body of a pipeline job: build the tiny model if needed, run the training script, then
register the adapter with its model card. Runs inside the job (never in the MCP server), so a
run completes even when no tunepack process is waiting for it.

It prints ``TUNEPACK_REGISTERED {json}`` when the adapter is in the registry, or
``TUNEPACK_ERROR {json}`` when finishing failed; the script's own lines come before.

Usage: python -m mcp_server.pipeline.job RUN_DIR
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from .. import settings
from ..errors import TunepackError
from ..jobs.markers import emit
from ..registry import LocalRegistry, read_manifest
from ..registry.card import card_or_short
from ..tracking import TrackioStore
from .records import RunRecord


def finalize(run: RunRecord) -> dict:
    """Register the trained adapter and write its card; return the REGISTERED payload."""
    cfg = run.config
    manifest = read_manifest(run.output_dir)
    summary = TrackioStore(run.trackio_dir).summary(cfg.tracking.project, run.run_name)
    entry = LocalRegistry().push(
        run.output_dir, run.registry_name, base_model=cfg.model.name, run_name=run.run_name,
        job_id=settings.job_id(),  # the local job this runs in (a sweep run's too)
        card=lambda version: card_or_short(manifest, summary, name=run.registry_name, version=version),
    )
    training = manifest["training"]
    return {
        "run_name": run.run_name, "script_path": run.script, "registry_name": entry.name,
        "registry_version": entry.version, "adapter_path": entry.path, "card_path": entry.card_path,
        "trackio_project": cfg.tracking.project, "trackio_run": run.run_name, "trackio_dir": run.trackio_dir,
        "steps": training["steps"], "first_loss": training["first_loss"], "last_loss": training["last_loss"],
        "used_4bit": manifest["quantization"]["used_4bit"], "mask_check": manifest["mask_check"],
    }


def main(run_dir: str) -> int:
    run = RunRecord.read(run_dir)
    output_dir = Path(run.output_dir)
    try:
        if run.tiny_model and not (Path(run.tiny_model) / "config.json").is_file():
            from ..train.tiny_model import ensure_tiny_model

            print("[tunepack] building the tiny model for this dataset", flush=True)
            ensure_tiny_model(run.config)
    except TunepackError as exc:
        emit("ERROR", exc.to_dict())
        return 3
    code = subprocess.call([sys.executable, run.script, "--output-dir", str(output_dir)])
    if code != 0:
        if run.default_output:
            shutil.rmtree(output_dir, ignore_errors=True)  # no half-written adapter survives a failed run
        return code
    try:
        payload = finalize(run)
    except TunepackError as exc:
        emit("ERROR", exc.to_dict())
        return 4
    if run.default_output:
        shutil.rmtree(output_dir, ignore_errors=True)  # the registry holds the copy now
    emit("REGISTERED", payload)
    print(f"[tunepack] registered {payload['registry_name']} v{payload['registry_version']} at {payload['adapter_path']}",
          flush=True)
    data = run.config.data
    if data.format == "traces" and not data.held_out:
        print("[tunepack] next-action is off: this run held out no sessions to score it on (set data.eval_fraction, "
              "e.g. 0.1, to score the adapter's tool calls on held-out sessions)", flush=True)
    if run.config.eval.tasks:
        emit("EVALUATED", gate(run, payload, evaluate_after_training(run, payload)))
    return 0


def gate(run: RunRecord, registered: dict, evaluated: dict) -> dict:
    """output.register_when beats_base: withdraw the version unless its eval shows the adapter beats the base on every
    scored task (an eval that failed shows nothing). The summary says so under ``withdrawn``."""
    from ..evals.results import compare_to_base

    if run.config.output.register_when != "beats_base":
        return evaluated
    better, not_better = compare_to_base(evaluated) if not evaluated.get("error") else ([], ["the eval failed"])
    if better and not not_better:
        print(f"[tunepack] kept {registered['registry_name']} v{registered['registry_version']}: it beats the base "
              f"({'; '.join(better)})", flush=True)
        return evaluated
    reason = "does not beat the base: " + ("; ".join(not_better) or "no task was scored")
    registry = LocalRegistry()
    registry.withdraw(registry.get(registered["registry_name"], registered["registry_version"]), reason)
    print(f"[tunepack] withdrew {registered['registry_name']} v{registered['registry_version']} "
          f"(output.register_when: beats_base): the adapter {reason}", flush=True)
    return {**evaluated, "withdrawn": reason}


def evaluate_after_training(run: RunRecord, registered: dict) -> dict:
    """The config's eval on base and base + adapter; an eval failure is reported, the adapter stays."""
    from ..evals import job as eval_job

    cfg = run.config
    print(f"[tunepack] evaluating {registered['registry_name']} v{registered['registry_version']} on "
          f"{', '.join(cfg.eval.tasks)}" + (f" (first {cfg.eval.limit} problems)" if cfg.eval.limit else ""), flush=True)
    try:
        entry = LocalRegistry().get(registered["registry_name"], registered["registry_version"])
        eval_dir = Path(run.output_dir).parent / "eval"
        eval_job.prepare(entry, cfg.eval, eval_dir, tracking={"project": cfg.tracking.project,
                                                              "run": f"{run.run_name}-eval", "group": "eval"})
        return eval_job.evaluate(eval_dir)
    except TunepackError as exc:
        print(f"[tunepack] evaluation failed: {exc}", flush=True)
        return {"error": exc.to_dict()}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
