"""The loop's sessions: every source converted (and redacted) the way ``tunepack traces convert`` does, then
grouped by session (the held-out split's key: source file name + session id), each group with a content hash.

    groups = collect(spec.sources, folder)     # {key: Group(rows, sha256)}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..evals.kit.heldout import group_key, group_sha256
from ..traces import ConvertOptions, convert
from ..train.data import read_local_rows


@dataclass(frozen=True)
class Group:
    key: str
    rows: tuple[dict, ...]
    sha256: str


def collect(sources: list[str], folder: Path) -> dict[str, Group]:
    """All sessions under ``sources`` now, by key (a session seen again with more turns keeps its key; the loop
    trains a key once)."""
    out = folder / "sessions.jsonl"
    convert(sources, out, ConvertOptions(), allow_empty=True)
    rows: dict[str, list[dict]] = {}
    if out.is_file():
        for row in read_local_rows(str(out)):
            rows.setdefault(group_key(row), []).append(row)
    return {key: Group(key, tuple(found), group_sha256(found)) for key, found in sorted(rows.items())}


def write_rows(path: Path, groups: list[Group]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for g in groups for row in g.rows),
                    encoding="utf-8")
    return path
