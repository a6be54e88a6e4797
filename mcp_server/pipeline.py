"""The spine: config → data pre-check → rendered script → job → Trackio → registry + model card.

Every later capability drives this path. It holds no training logic of its own: it calls the
rooms (config, train, jobs, tracking, registry) through their interfaces, and fails early with one
clear error before anything is spent or written.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel

from .config import TrainConfig, load_config
from .errors import ConfigError, DataError, JobError
from .home import home_dir, trackio_dir
from .jobs import JobBackend, JobSpec, failure_error, get_backend, parse_markers
from .registry import LocalRegistry, read_manifest, render_card
from .tracking import TrackioStore
from .train.maskcheck import MaskCheckError, detect_format, rows_without_assistant
from .train.render import config_hash, run_name_for, write_script
from .train.tiny_model import fingerprint as tiny_fingerprint


class RunResult(BaseModel):
    run_name: str
    job_id: str
    log_path: str | None
    script_path: str
    registry_name: str
    registry_version: int
    adapter_path: str
    card_path: str
    trackio_project: str
    trackio_run: str
    trackio_dir: str
    steps: int
    first_loss: float | None
    last_loss: float | None
    used_4bit: bool
    mask_check: dict
    wall_time_s: float


# --- data pre-check (light: json + DuckDB, no torch) ----------------------------------------------

def read_local_rows(path: str) -> list[dict]:
    """Rows of one local file; a malformed line is an error naming the file and line."""
    p = Path(path)
    if p.suffix == ".parquet":
        import duckdb

        rel = duckdb.read_parquet(str(p))
        return [dict(zip(rel.columns, row)) for row in rel.fetchall()]
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".json" and text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise DataError(f"'{p}' is not valid JSON: {exc}.", "fix the file or export it as JSON Lines.") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            raise DataError(f"'{p}' line {number} is not valid JSON ({exc}).",
                            "fix or remove that line; each line must hold one JSON object.") from None
    return rows


def precheck_data(cfg: TrainConfig) -> int:
    """Fail before any job starts on empty data or rows with no assistant turn. Returns the row count."""
    if not cfg.data.path:
        return 0  # Hub data: the script checks it where it is loaded
    rows = [row for path in cfg.data.path for row in read_local_rows(path)]
    if not rows:
        raise DataError(f"The dataset {', '.join(cfg.data.path)} has no rows.",
                        "add training rows (one JSON object per line) or point data.path at the right file.")
    try:
        fmt = cfg.data.format if cfg.data.format != "auto" else detect_format(rows[0].keys(), cfg.data.messages_column)
        missing = rows_without_assistant(rows, fmt, cfg.data.messages_column, cfg.data.tools_column)
    except MaskCheckError as exc:
        raise DataError(exc.problem, exc.fix) from None
    if missing:
        shown = ", ".join(map(str, missing[:20])) + (" …" if len(missing) > 20 else "")
        raise DataError(
            f"{len(missing)} of {len(rows)} rows have no assistant turn to train on (row indices: {shown}).",
            "drop those rows or give each an assistant message with content or tool_calls.",
        )
    return len(rows)


# --- the embedded tiny model ----------------------------------------------------------------------

def ensure_tiny_model(cfg: TrainConfig, python: str | None = None) -> str:
    """Build (once per dataset) the tiny model ``tiny:<arch>`` names; return its folder."""
    if not cfg.data.path:
        raise ConfigError(f"model.name '{cfg.model.name}' builds its tokenizer from local data, but data.hub_id is set.",
                          "use local files in data.path with the tiny model, or a real model with Hub data.")
    arch = cfg.model.name.split(":", 1)[1]
    target = home_dir("models") / f"tiny-{arch}-{tiny_fingerprint(cfg.data.path, arch, 2048)}"
    with FileLock(str(target) + ".lock", timeout=600):  # concurrent runs build it once
        if (target / "config.json").is_file():
            return str(target)
        cmd = [python or sys.executable, "-m", "mcp_server.train.tiny_model", "--arch", arch, "-o", str(target),
               "--data", *cfg.data.path]
        done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-8:])
        raise JobError(f"Building the tiny model failed:\n{tail}",
                       "install the training extra (pip install torch==2.13.0 && pip install -e '.[train]').")
    return str(target)


# --- the pipeline ---------------------------------------------------------------------------------

def run_pipeline(config: str | Path | TrainConfig, *, backend: JobBackend | None = None,
                 on_line: Callable[[str], None] | None = None, timeout_s: int | None = None) -> RunResult:
    started = time.time()
    cfg = load_config(config) if not isinstance(config, TrainConfig) else config
    backend = backend or get_backend("local")
    precheck_data(cfg)
    model_path = ensure_tiny_model(cfg, getattr(backend, "python", None)) if cfg.model.is_tiny else None

    run_name = run_name_for(cfg)
    run_dir = home_dir("runs", run_name)
    output_dir = Path(cfg.output.adapter_dir) if cfg.output.adapter_dir else run_dir / "adapter"
    if not cfg.output.adapter_dir:
        shutil.rmtree(output_dir, ignore_errors=True)  # a reused run name starts from a clean folder
    script = write_script(cfg, run_dir / "train.py", model_path=model_path, run_name=run_name)
    tdir = trackio_dir()
    spec = JobSpec(script=str(script), args=["--output-dir", str(output_dir)], name=run_name, timeout_s=timeout_s,
                   labels={"project": cfg.tracking.project, "run": run_name, "config_hash": config_hash(cfg),
                           "stage": "train"},
                   env={"TRACKIO_DIR": str(tdir)})
    job = backend.submit(spec)
    try:
        info = backend.wait(job.id, on_line=on_line)
    except KeyboardInterrupt:
        backend.cancel(job.id)
        raise
    log_text = backend.logs(job.id)
    if info.state != "succeeded":
        shutil.rmtree(output_dir, ignore_errors=True)  # no half-written adapter survives a failed run
        raise failure_error(info, log_text)

    manifest = read_manifest(output_dir)
    summary = TrackioStore(tdir).summary(cfg.tracking.project, run_name)
    registry = LocalRegistry()
    entry = registry.push(
        output_dir, cfg.registry_name, base_model=cfg.model.name, run_name=run_name, job_id=job.id,
        card=lambda version: render_card(manifest, summary, name=cfg.registry_name, version=version),
    )
    if not cfg.output.adapter_dir:
        shutil.rmtree(output_dir, ignore_errors=True)  # the registry holds the copy now
    mask = (parse_markers(log_text, "MASK") or [manifest.get("mask_check", {})])[-1]
    training = manifest["training"]
    return RunResult(
        run_name=run_name, job_id=job.id, log_path=info.log_path, script_path=str(script),
        registry_name=entry.name, registry_version=entry.version, adapter_path=entry.path,
        card_path=entry.card_path, trackio_project=cfg.tracking.project, trackio_run=run_name,
        trackio_dir=str(tdir), steps=training["steps"], first_loss=training["first_loss"],
        last_loss=training["last_loss"], used_4bit=manifest["quantization"]["used_4bit"], mask_check=mask,
        wall_time_s=round(time.time() - started, 1),
    )
