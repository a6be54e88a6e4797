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

Usage (YAML):
    data:
      path: ~/.pi/agent/sessions
      format: traces
      traces: {thinking: drop, drop_harness_context: true}
    chat_template: trl:qwen3
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..config import TrainConfig
from ..home import home_dir
from .convert import convert
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
    section = cfg.data.traces.model_dump() if cfg.data.traces else {}
    return ConvertOptions(**{**section, "template": shaping_template(cfg)})


def _digest(cfg: TrainConfig, opts: ConvertOptions) -> str:
    digest = hashlib.sha256(opts.model_dump_json().encode())
    for entry in cfg.data.path:
        root = Path(entry)
        for path in sorted([root] if root.is_file() else (p for p in root.rglob("*") if p.is_file())):
            stat = path.stat()
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def training_config(cfg: TrainConfig, out_dir: str | Path | None = None) -> TrainConfig:
    """``cfg`` reading converted rows when ``data.format`` is ``traces``; otherwise ``cfg`` itself."""
    if cfg.data.format != "traces":
        return cfg
    opts = options_for(cfg)
    folder = Path(out_dir) if out_dir is not None else home_dir("traces", _digest(cfg, opts))
    rows = folder / ROWS_FILE
    stats = folder / "traces.stats.json"
    if out_dir is not None or not (rows.is_file() and stats.is_file()):
        convert(cfg.data.path, rows, opts)
    fmt = "prompt_completion" if opts.rows == "turn" else "messages"
    data = cfg.data.model_copy(update={"path": [str(rows)], "format": fmt, "traces": None,
                                       "messages_column": "messages", "tools_column": "tools"})
    return cfg.model_copy(update={"data": data})


def conversion_stats(cfg: TrainConfig) -> dict | None:
    """The stats written next to the converted rows of a converted config, if any."""
    if not cfg.data.path:
        return None
    path = Path(cfg.data.path[0]).with_name("traces.stats.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
