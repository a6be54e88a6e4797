"""The spine: config → data pre-check → rendered script → job → Trackio → registry + model card.

Every later capability drives this path. It holds no training logic of its own: it calls the
rooms (config, train, jobs, tracking, registry) through their interfaces, and fails early with one
clear error before anything is spent or written.

``start_pipeline`` returns as soon as the job is submitted (what an MCP tool needs); the job
itself (``pipeline_job``) trains, then registers the adapter and writes the card, so a run
finishes properly even when nobody is waiting for it. ``run_pipeline`` = start + wait (the CLI).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from .config import TrainConfig, load_config
from .errors import ConfigError, DataError, JobError
from .home import home_dir, trackio_dir
from .jobs import JobBackend, JobInfo, JobSpec, failure_error, get_backend, parse_markers
from .train.maskcheck import MaskCheckError, detect_format, rows_without_assistant
from .train.render import config_hash, run_name_for, write_script
from .train.tiny_model import fingerprint as tiny_fingerprint
from .traces.spine import training_config, training_config_or_pending

TINY_VOCAB = 2048


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
    eval: dict | None = None  # the eval summary (table, scores) when the config has eval.tasks


class StartedRun(BaseModel):
    run_name: str
    run_dir: str
    script_path: str
    job: JobInfo


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
    cfg = training_config(cfg)  # raw agent sessions (data.format: traces) are checked as the rows they become
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

def tiny_model_path(cfg: TrainConfig) -> Path:
    """Where the tiny model ``tiny:<arch>`` for this dataset lives (built on first use)."""
    if not cfg.data.path:
        raise ConfigError(f"model.name '{cfg.model.name}' builds its tokenizer from local data, but data.hub_id is set.",
                          "use local files in data.path with the tiny model, or a real model with Hub data.")
    arch = cfg.model.name.split(":", 1)[1]
    return home_dir("models") / f"tiny-{arch}-{tiny_fingerprint(cfg.data.path, arch, TINY_VOCAB)}"


def ensure_tiny_model(cfg: TrainConfig) -> str:
    """Build the tiny model if it is not there yet (under a lock, so concurrent runs build it once).
    Needs the [train] extra: call it from a job process, or from the CLI."""
    from filelock import FileLock

    from .errors import require_extra

    target = tiny_model_path(cfg)
    with FileLock(str(target) + ".lock", timeout=900):
        if not (target / "config.json").is_file():
            require_extra("torch", "train")
            from .train.tiny_model import build_tiny_model

            build_tiny_model(cfg.data.path, target, arch=cfg.model.name.split(":", 1)[1], vocab_size=TINY_VOCAB)
    return str(target)


# --- start, finish, run ---------------------------------------------------------------------------

def data_size(cfg: TrainConfig) -> tuple[int, float]:
    """Rows and a rough mean tokens per row (bytes / 4) of local data, for time estimates. Sessions on a Hub that
    cannot be reached now count as unknown rows of windows that fill max_length."""
    cfg, pending = training_config_or_pending(cfg)
    if pending:  # windows of long sessions fill each run's max_length (estimates take min(avg, max_length))
        return 0, float("inf")
    rows = precheck_data(cfg)
    size = sum(Path(p).stat().st_size for p in cfg.data.path)
    return rows, (size / rows / 4 if rows else 512.0)


def remote_timeout(cfg: TrainConfig, flavor: str | None, timeout_s: int | None, force: bool = False) -> int:
    """The checked timeout of a remote training job (refuses < 30 min unless forced; suggests one)."""
    from .pipeline_remote import check_timeout, suggest_timeout_s

    rows, avg = data_size(cfg)
    return check_timeout(timeout_s, suggest_timeout_s(cfg, rows, avg, flavor), force)


def start_pipeline(config: str | Path | TrainConfig, *, backend: JobBackend | None = None,
                   timeout_s: int | None = None, flavor: str | None = None,
                   extra_labels: dict[str, str] | None = None, force: bool = False) -> StartedRun:
    """Validate, pre-check the data, render, and submit the pipeline job; return at once."""
    cfg = load_config(config) if not isinstance(config, TrainConfig) else config
    backend = backend or get_backend("local")
    run_name = run_name_for(cfg)
    run_dir = home_dir("runs", run_name)
    cfg = training_config(cfg, run_dir / "data")  # data.format traces: sessions → chat rows in the run folder
    rows, avg_tokens = data_size(cfg)
    labels = {"project": cfg.tracking.project, "run": run_name, "config_hash": config_hash(cfg), "stage": "train",
              **(extra_labels or {})}
    if backend.name != "local":
        from .pipeline_remote import prepare_remote

        remote, push, timeout = prepare_remote(cfg, rows, avg_tokens, flavor=flavor, timeout_s=timeout_s, force=force)
        script = write_script(remote, run_dir / "train.py", run_name=run_name, push=push)
        spec = JobSpec(script=str(script), name=run_name, timeout_s=timeout, flavor=flavor, secrets=["HF_TOKEN"],
                       labels={**labels, "output_repo": push["repo_id"]})
        return StartedRun(run_name=run_name, run_dir=str(run_dir), script_path=str(script), job=backend.submit(spec))
    model_path = str(tiny_model_path(cfg)) if cfg.model.is_tiny else None
    default_output = not cfg.output.adapter_dir
    output_dir = run_dir / "adapter" if default_output else Path(cfg.output.adapter_dir)
    if default_output:
        shutil.rmtree(output_dir, ignore_errors=True)  # a reused run name starts from a clean folder
    script = write_script(cfg, run_dir / "train.py", model_path=model_path, run_name=run_name)
    tdir = trackio_dir()
    (run_dir / "run.json").write_text(json.dumps({
        "config": cfg.model_dump(mode="json"), "run_name": run_name, "script": str(script),
        "output_dir": str(output_dir), "default_output": default_output, "registry_name": cfg.registry_name,
        "trackio_dir": str(tdir), "tiny_model": model_path,
    }, indent=2))
    spec = JobSpec(module="mcp_server.pipeline_job", args=[str(run_dir)], name=run_name, timeout_s=timeout_s,
                   flavor=flavor, env={"TRACKIO_DIR": str(tdir)}, labels=labels)
    return StartedRun(run_name=run_name, run_dir=str(run_dir), script_path=str(script), job=backend.submit(spec))


def result_of(info: JobInfo, log_text: str, run_dir: str | Path | None = None) -> RunResult:
    """The RunResult of a finished pipeline job, or the job's own error."""
    if info.stage != "COMPLETED":
        raise failure_error(info, log_text)
    registered = parse_markers(log_text, "REGISTERED")
    if not registered:
        raise JobError(f"Job {info.id} completed without registering an adapter (no TUNEPACK_REGISTERED line).",
                       "read its log (jobs_logs) — it was probably not a pipeline job.")
    payload = registered[-1]
    evaluated = parse_markers(log_text, "EVALUATED")
    wall = (info.ended_at or time.time()) - info.created_at
    return RunResult(job_id=info.id, log_path=info.log_path, wall_time_s=round(wall, 1),
                     eval=evaluated[-1] if evaluated else None, **payload)


def run_pipeline(config: str | Path | TrainConfig, *, backend: JobBackend | None = None,
                 on_line: Callable[[str], None] | None = None, timeout_s: int | None = None) -> RunResult:
    """Start the pipeline job and block until it has trained and registered the adapter."""
    backend = backend or get_backend("local")
    started = start_pipeline(config, backend=backend, timeout_s=timeout_s)
    try:
        info = backend.wait(started.job.id, on_line=on_line)
    except KeyboardInterrupt:
        backend.cancel(started.job.id)
        raise
    return result_of(info, backend.logs(started.job.id), started.run_dir)
