"""Raw agent sessions as training data: ``data.format: traces`` in a tunepack config.

``training_config(cfg, out_dir)`` converts the session folders/files in ``data.path`` on the host and
returns a copy of the config that reads the converted rows (``data.format`` becomes ``messages``, or
``prompt_completion`` for ``data.traces.rows: turn``), so the rendered training script only ever sees
plain chat rows. The pipeline converts into the run folder (``<run>/data/traces.jsonl`` + its stats);
checks that run before a run folder exists (pre-check, preflight, render) convert into a cache folder
keyed by the sources' names, sizes and times and the options, so repeating them is cheap. Configs of
any other format come back unchanged. Rows are shaped for the template training will use: the one named
by ``chat_template: trl:<name>`` / ``tunepack:<name>``, or for ``chat_template: model`` the model's stock
template as far as the host can tell (``train/families.py``: the replica's, a local or cached tokenizer's,
else the family from the model's name); a template that cannot carry tool calls is refused.

Sessions may also come from a Hub dataset repo of raw session files (``data.hub_id`` + ``data.revision``):
they are downloaded at the commit the revision points at (``hub.py``) and the stats record the commit and
each file's hash.

Usage (YAML):
    data:
      path: ~/.pi/agent/sessions      # or: hub_id: alice/pi-sessions, revision: main
      format: traces
      traces: {thinking: drop, drop_harness_context: true}
    chat_template: trl:qwen3
"""

from __future__ import annotations

import json
from pathlib import Path

from ..config import TrainConfig
from ..home import home_dir
from .convert import convert, files_digest
from .model import DROPPER_TEMPLATES, KEEPER_TEMPLATES, ConvertOptions

ROWS_FILE = "traces.jsonl"


def shaping_template(cfg: TrainConfig) -> str | None:
    """The template name the converted rows are shaped for (None: rows as they are, qwen3-style)."""
    setting = cfg.chat_template
    if setting.startswith(("trl:", "tunepack:")):
        return setting.split(":", 1)[1]
    if setting != "model":
        return None  # a .jinja file of the user's: rows as they are
    from ..train.families import template_for_model

    stock, _ = template_for_model(cfg.model.name, cfg.model.revision)
    return stock if stock in KEEPER_TEMPLATES or stock in DROPPER_TEMPLATES else None


def options_for(cfg: TrainConfig) -> ConvertOptions:
    section = cfg.data.traces.model_dump(exclude={"windows"}) if cfg.data.traces else {}
    return ConvertOptions(**{**section, "template": shaping_template(cfg)})


def sources(cfg: TrainConfig) -> list[str]:
    """The session paths to convert: data.path, or the Hub repo as an hf://datasets/ reference."""
    if cfg.data.hub_id:
        return [f"hf://datasets/{cfg.data.hub_id}" + (f"@{cfg.data.revision}" if cfg.data.revision else "")]
    return list(cfg.data.path)


def _digest(cfg: TrainConfig, opts: ConvertOptions) -> str:
    extra = ""
    if cfg.data.hub_id:  # a branch moves: the commit it points at now is part of the key
        from .hub import _commit

        extra = f"{cfg.data.hub_id}@{_commit(cfg.data.hub_id, cfg.data.revision)}"
    return files_digest(list(cfg.data.path), opts, extra)


def training_config(cfg: TrainConfig, out_dir: str | Path | None = None) -> TrainConfig:
    """``cfg`` reading converted rows when ``data.format`` is ``traces``; otherwise ``cfg`` itself."""
    if cfg.data.format != "traces":
        return cfg
    opts = options_for(cfg)
    folder = Path(out_dir) if out_dir is not None else home_dir("traces", _digest(cfg, opts))
    rows = folder / ROWS_FILE
    stats = folder / "traces.stats.json"
    paths = sources(cfg)
    if out_dir is not None or not (rows.is_file() and stats.is_file()):
        convert(paths, rows, opts)
    fmt = "prompt_completion" if opts.rows == "turn" else "messages"
    windows = (cfg.data.traces.windows if cfg.data.traces else None) or cfg.data.windows
    data = cfg.data.model_copy(update={"path": [str(rows)], "hub_id": None, "revision": None, "format": fmt,
                                       "traces": None, "windows": windows,
                                       "messages_column": "messages", "tools_column": "tools"})
    return cfg.model_copy(update={"data": data})


def training_config_or_pending(cfg: TrainConfig) -> tuple[TrainConfig, str | None]:
    """``training_config(cfg)``, or — when its sessions are on a Hub that cannot be reached now — ``cfg``
    unconverted and a note saying the conversion happens when the pipeline runs (for offline render/plan)."""
    from .hub import HubUnreachable

    try:
        return training_config(cfg), None
    except HubUnreachable as exc:
        return cfg, (f"{exc.problem} The sessions of {cfg.data.hub_id} are downloaded and converted when the pipeline "
                     "runs (tunepack run / pipeline_run); this script alone cannot read raw sessions.")


def conversion_stats(cfg: TrainConfig) -> dict | None:
    """The stats written next to the converted rows of a converted config, if any."""
    if not cfg.data.path:
        return None
    from .writer import stats_path_for

    path = stats_path_for(Path(cfg.data.path[0]))
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except ValueError:
        return None


def provenance(cfg: TrainConfig) -> dict | None:
    """What the rendered script records of converted sessions: their source (a Hub repo's commit and file
    hashes) and the conversion's counts."""
    stats = conversion_stats(cfg)
    if not stats:
        return None
    keys = ("source", "sessions", "conversations", "rows", "assistant_turns", "tool_calls", "dropped", "redactions",
            "windows", "row_format", "verified")
    return {k: stats.get(k) for k in keys}
