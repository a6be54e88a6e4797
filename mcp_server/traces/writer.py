"""Write the dataset and its stats atomically: temp files in the target folder, then rename.

``OUT`` ending in ``.jsonl`` (or ``.json``) is written as JSON Lines; ``.parquet`` through ``datasets``
with ``messages`` / ``prompt`` / ``completion`` / ``tools`` as lists of ``Json`` values (tool arguments
keep their own shapes). Both load with ``datasets.load_dataset``. The stats go next to it as
``<OUT without suffix>.stats.json``. Until the final rename nothing exists at ``OUT``; on any error the
temp files are removed, so a failed conversion never leaves a partial dataset behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..errors import TraceError

SUFFIXES = (".jsonl", ".json", ".parquet")


def stats_path_for(out: Path) -> Path:
    return out.with_name(out.name[: -len(out.suffix)] + ".stats.json")


def check_output(out: str | Path) -> Path:
    out = Path(out).expanduser()
    if out.suffix not in SUFFIXES:
        raise TraceError(f"The output '{out}' has the suffix '{out.suffix or '(none)'}'.",
                         "name the output .jsonl (JSON Lines) or .parquet, e.g. -o data/traces.jsonl.")
    if out.is_dir():
        raise TraceError(f"The output '{out}' is a folder.", "give a file path, e.g. -o data/traces.jsonl.")
    return out


def _write_jsonl(rows: list[dict], handle) -> None:
    for row in rows:
        handle.write(json.dumps(row, ensure_ascii=False))
        handle.write("\n")


def _write_parquet(rows: list[dict], path: str) -> None:
    from ..errors import require_extra

    require_extra("datasets", "train")
    from datasets import Dataset, Features, Json, List, Value

    features = {}
    for key in rows[0]:
        if key in ("messages", "prompt", "completion", "tools"):
            features[key] = List(Json())
        elif isinstance(rows[0][key], int):
            features[key] = Value("int64")
        else:
            features[key] = Value("string")
    Dataset.from_list(rows, features=Features(features)).to_parquet(path)


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(rows: list[dict], out: Path, stats: dict) -> Path:
    """Write ``rows`` to ``out`` and ``stats`` beside it; returns the stats path."""
    out = check_output(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stats_path = stats_path_for(out)
    temps: list[str] = []
    try:
        fd, data_tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        temps.append(data_tmp)
        if out.suffix == ".parquet":
            os.close(fd)
            _write_parquet(rows, data_tmp)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                _write_jsonl(rows, handle)
        fd, stats_tmp = tempfile.mkstemp(prefix=f".{stats_path.name}.", suffix=".tmp", dir=out.parent)
        temps.append(stats_tmp)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(stats, handle, indent=2, ensure_ascii=False, default=str)
        mode = _file_mode()
        for tmp in (stats_tmp, data_tmp):  # temp files are private (0600); the results get the usual mode
            os.chmod(tmp, mode)
        os.replace(stats_tmp, stats_path)
        os.replace(data_tmp, out)
        temps.clear()
    finally:
        for tmp in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return stats_path
