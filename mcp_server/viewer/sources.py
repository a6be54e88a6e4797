"""Where the twin finds a local dataset's splits: files and folders mapped to (split → files).

Layouts, as the ``datasets`` library names them:
- a single file (.parquet/.jsonl/.json/.csv/.arrow) → split "train";
- a ``save_to_disk`` folder: ``dataset_dict.json`` (one sub-folder per split) or ``state.json`` (one
  dataset → "train");
- a ``datasets`` cache folder (``dataset_info.json`` next to ``<builder>-<split>[-NNNNN-of-NNNNN].arrow``);
- any other folder: data files grouped by the split keyword in their path (``train*.jsonl``,
  ``data/test-0000.parquet``, ``validation/…``); with no keyword anywhere, every file is "train";
- a file or folder of raw agent sessions (Pi, Claude Code, Codex, OpenCode, Factory Droid, Hermes): the chat rows
  tunepack converts them to (default options, cached per state of the files), as split "train".

The revision is a hash of every data file's path, size and mtime: a changed file means a new
revision, and the twin rebuilds its export and indexes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..guard_paths import Rules, refuse_credential
from ..walk import walk_files
from .backend import NOT_FOUND, ViewerError

SUFFIXES = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".ndjson": "json", ".csv": "csv",
            ".tsv": "csv", ".arrow": "arrow"}
SPLIT_WORDS = {"train": "train", "training": "train", "test": "test", "testing": "test", "eval": "test",
               "evaluation": "test", "validation": "validation", "valid": "validation", "val": "validation",
               "dev": "validation"}
_KEYWORD = re.compile(r"(?:^|[-_./\s])(" + "|".join(sorted(SPLIT_WORDS, key=len, reverse=True)) +
                      r")(?=$|[-_./\s0-9])", re.IGNORECASE)
_CACHE_FILE = re.compile(r"^(?P<builder>.+)-(?P<split>[^-]+?)(?:-\d{5}-of-\d{5})?\.arrow$")
SKIP_NAMES = {"state.json", "dataset_info.json", "dataset_dict.json", "dataset_infos.json"}
LAYOUT_VERSION = "3"  # 3: row groups of ~64 KB, listed per part, read one by one when fetching rows


@dataclass
class SplitFiles:
    name: str
    files: list[Path]


@dataclass
class Layout:
    """A local dataset: its splits (in a stable order) and its revision."""

    root: Path
    kind: str
    splits: list[SplitFiles] = field(default_factory=list)

    @property
    def revision(self) -> str:
        digest = hashlib.sha256(LAYOUT_VERSION.encode())
        for split in self.splits:
            for f in split.files:
                st = f.stat()
                digest.update(f"{split.name}\0{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return digest.hexdigest()[:20]

    def split(self, name: str) -> SplitFiles:
        for split in self.splits:
            if split.name == name:
                return split
        raise ViewerError(f"'{self.root}' has no split '{name}' (config 'default').",
                          f"use one of: {', '.join(s.name for s in self.splits)} (viewer_splits lists them).",
                          NOT_FOUND)


def _data_files(folder: Path) -> list[Path]:
    allowed = Rules().allows  # a credential file inside the folder (or a link to one) is left out
    return walk_files(folder, lambda p: p.suffix.lower() in SUFFIXES and p.name not in SKIP_NAMES
                      and not p.name.startswith((".", "cache-"))
                      and not any(part.startswith(".") for part in p.relative_to(folder).parts) and allowed(p))


def _by_keyword(root: Path, files: list[Path]) -> list[SplitFiles]:
    groups: dict[str, list[Path]] = {}
    for f in files:
        match = _KEYWORD.search("/" + str(f.relative_to(root)))
        groups.setdefault(SPLIT_WORDS[match.group(1).lower()] if match else "", []).append(f)
    if set(groups) == {""}:
        return [SplitFiles("train", groups[""])]
    groups.pop("", None)  # like `datasets`: once split names appear, files without one are not data
    return _ordered(groups)


def _ordered(groups: dict[str, list[Path]]) -> list[SplitFiles]:
    """train, validation, test first (the Hub's order), then other split names alphabetically."""
    rank = {"train": 0, "validation": 1, "test": 2}
    return [SplitFiles(name, groups[name]) for name in sorted(groups, key=lambda n: (rank.get(n, 3), n))]


def _saved_dataset(folder: Path, name: str) -> SplitFiles:
    refuse_credential(folder, "dataset folder")  # dataset_dict.json names its split folders
    state = json.loads((folder / "state.json").read_text())
    return SplitFiles(name, [folder / entry["filename"] for entry in state.get("_data_files", [])])


def _cache_leaf(root: Path) -> Path | None:
    leaves = [p.parent for p in walk_files(root, lambda p: p.name == "dataset_info.json")
              if any(_CACHE_FILE.match(a.name) and not a.name.startswith("cache-") for a in p.parent.glob("*.arrow"))]
    return max(leaves, key=lambda p: p.stat().st_mtime) if leaves else None


def _from_cache(leaf: Path) -> list[SplitFiles]:
    groups: dict[str, list[Path]] = {}
    for f in sorted(leaf.glob("*.arrow")):
        match = _CACHE_FILE.match(f.name)
        if match and not f.name.startswith("cache-"):
            groups.setdefault(match.group("split"), []).append(f)
    return _ordered(groups)


def find_layout(path: str) -> Layout:
    """The splits of a local dataset path, or a ViewerError (ResponseNotFound) saying what is wrong; InputError
    for a credential file or folder (before anything is read)."""
    root = refuse_credential(Path(path).expanduser(), "dataset")
    from ..traces.convert import local_rows

    if (sessions := local_rows(root)) is not None:  # raw agent sessions: the chat rows tunepack converts them to
        return Layout(sessions[0], "sessions", [SplitFiles("train", [sessions[0]])])
    if root.is_file():
        if root.suffix.lower() not in SUFFIXES:
            raise ViewerError(f"'{path}' is not a data file the twin reads.",
                              f"give a {'/'.join(sorted(SUFFIXES))} file or a folder of them.", NOT_FOUND)
        return Layout(root, "file", [SplitFiles("train", [root])])
    if not root.is_dir():
        raise ViewerError(f"'{path}' does not exist on this machine.",
                          "give the path of a data file or folder (source='local'), or a Hub id with source='hf'.",
                          NOT_FOUND)
    if (root / "dataset_dict.json").is_file():
        names = json.loads((root / "dataset_dict.json").read_text()).get("splits", [])
        layout = Layout(root, "save_to_disk", [_saved_dataset(root / n, n) for n in names])
    elif (root / "state.json").is_file():
        layout = Layout(root, "save_to_disk", [_saved_dataset(root, "train")])
    elif (leaf := _cache_leaf(root)) is not None:
        layout = Layout(leaf, "datasets_cache", _from_cache(leaf))
    else:
        layout = Layout(root, "files", _by_keyword(root, _data_files(root)))
    layout.splits = [s for s in layout.splits if s.files]
    for split in layout.splits:  # files a save_to_disk state.json or dataset_dict.json names
        for f in split.files:
            refuse_credential(f, "data file")
    if not layout.splits:
        raise ViewerError(f"No data files under '{path}'.",
                          f"point at a folder with {'/'.join(sorted(SUFFIXES))} files, a save_to_disk folder or a "
                          "datasets cache folder.", NOT_FOUND)
    return layout
