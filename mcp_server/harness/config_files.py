"""Editing other people's harness configs without losing anything of theirs: merge tunepack's entries into a
JSON file and take exactly those out again; put tunepack's tables into a Codex config.toml as one marked block
(their comments and order stay byte for byte); write files and skill folders atomically (temp + rename).

Every reader refuses a malformed file with ``SetupError`` (what is wrong, where, what to do) before anything is
written.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from ..errors import SetupError

UNCHANGED = "setup changed nothing"
NOT_COPIED = ("__pycache__", "*.pyc", "*.lock")  # caches, and the lock pitfall writers take


@dataclass
class JsonPart:
    """tunepack's entries in one JSON file: ``values`` replace a key (path → value), ``items`` join a list."""

    values: dict[tuple[str, ...], object] = field(default_factory=dict)
    items: dict[tuple[str, ...], list] = field(default_factory=dict)
    skeleton: dict = field(default_factory=dict)  # what a new file starts with (and what an emptied one holds)


def owned(path: tuple[str, ...]) -> bool:
    """tunepack's own server entries: setup updates them, remove takes them out whatever they hold. Every other key
    (a permission, a role) is theirs once it holds something else: setup keeps it, remove leaves it."""
    return len(path) == 2 and path[0] in ("mcp", "mcpServers") and "tunepack" in path[1]


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "…"


# --- JSON -------------------------------------------------------------------------------------------------

def read_json(path: Path) -> tuple[dict | None, str | None]:
    """The document and its text, (None, None) when the file is absent."""
    if not path.exists():
        return None, None
    text = path.read_text(encoding="utf-8")
    try:
        doc = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        extra = " (comments or trailing commas?)" if path.suffix == ".jsonc" else ""
        raise SetupError(f"{path} is not valid JSON{extra}: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
                         f"correct that spot (or move the file away) and rerun; {UNCHANGED}.") from exc
    if not isinstance(doc, dict):
        raise SetupError(f"{path} holds a JSON {type(doc).__name__}, not an object.",
                         f"make it an object ({{...}}) or move it away and rerun; {UNCHANGED}.")
    return doc, text


def dump_json(doc: dict, like: str | None) -> str:
    """``doc`` as text, indented like the file it came from (two spaces for a new or one-line file)."""
    found = re.search(r"\n([ \t]+)\S", like or "")
    return json.dumps(doc, indent=found.group(1) if found else 2, ensure_ascii=False) + "\n"


def _node(doc: dict, path: tuple[str, ...], file: Path, create: bool) -> dict | None:
    node = doc
    for depth, key in enumerate(path):
        if key not in node:
            if not create:
                return None
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            where = ".".join(path[:depth + 1])
            raise SetupError(f"{file}: `{where}` is a {type(node).__name__}, but tunepack's entries go inside it "
                             "as keys of an object.",
                             f"write `{where}` as an object (for OpenCode a permission string like \"allow\" is "
                             f"{{\"*\": \"allow\"}}) and rerun; {UNCHANGED}.")
    return node


def _list(doc: dict, path: tuple[str, ...], file: Path, create: bool) -> list | None:
    parent = _node(doc, path[:-1], file, create)
    if parent is None or (path[-1] not in parent and not create):
        return None
    found = parent.setdefault(path[-1], [])
    if not isinstance(found, list):
        raise SetupError(f"{file}: `{'.'.join(path)}` is a {type(found).__name__}, not a list.",
                         f"write it as a list of strings and rerun; {UNCHANGED}.")
    return found


def merge_json(doc: dict, part: JsonPart, file: Path) -> list[str]:
    """Put ``part`` into ``doc`` (in place). Returns the keys of theirs that were kept instead of tunepack's."""
    kept = []
    for path, value in part.values.items():
        node = _node(doc, path[:-1], file, create=True)
        assert node is not None
        key = path[-1]
        if key in node and node[key] != value and not owned(path):
            kept.append(f"{file}: kept your `{'.'.join(path)}` = {_short(node[key])} (tunepack's would be "
                        f"{_short(value)}; change or rename yours and rerun to get it)")
            continue
        node[key] = value
    for path, items in part.items.items():
        found = _list(doc, path, file, create=True)
        assert found is not None
        found.extend(item for item in items if item not in found)
    return kept


def _prune(doc: dict, path: tuple[str, ...]) -> None:
    """Drop the containers on ``path`` that taking tunepack's entries out left empty, deepest first."""
    for depth in range(len(path), 0, -1):
        parent = doc
        for key in path[:depth - 1]:
            parent = parent[key]
        if parent.get(path[depth - 1]) in ({}, []):
            del parent[path[depth - 1]]


def unmerge_json(doc: dict, part: JsonPart, file: Path) -> None:
    """Take ``part`` out of ``doc`` (in place): tunepack's keys, and other keys only while they hold its value."""
    for path, value in part.values.items():
        node = _node(doc, path[:-1], file, create=False)
        if node is not None and path[-1] in node and (owned(path) or node[path[-1]] == value):
            del node[path[-1]]
            _prune(doc, path[:-1])
    for path, items in part.items.items():
        found = _list(doc, path, file, create=False)
        if found is not None:
            found[:] = [item for item in found if item not in items]
            _prune(doc, path)


def json_after(path: Path, part: JsonPart, remove: bool) -> tuple[str | None, str | None, list[str]]:
    """The file's text before and after adding (or removing) ``part``; None = absent. Plus the kept keys."""
    doc, text = read_json(path)
    if doc is None:
        if remove:
            return None, None, []
        doc = json.loads(json.dumps(part.skeleton))
    kept = []
    if remove:
        unmerge_json(doc, part, path)
        if doc in ({}, part.skeleton):
            return text, None, []
    else:
        kept = merge_json(doc, part, path)
    after = dump_json(doc, text)
    if text is not None and json.loads(text or "{}") == doc:
        after = text  # nothing of ours changed: keep their bytes
    return text, after, kept


def json_has(path: Path, keys: tuple[str, ...]) -> bool:
    """Whether the JSON file has the nested key (an unreadable file counts as having it: leave things alone)."""
    try:
        doc, _ = read_json(path)
        return bool(doc) and _node(doc or {}, keys, path, create=False) is not None
    except SetupError:
        return True


# --- TOML (Codex) ---------------------------------------------------------------------------------------

BEGIN = "# >>> tunepack setup: `tunepack setup codex --remove` takes this block out >>>"
END = "# <<< tunepack setup <<<"


def _toml(text: str, path: Path, what: str, fix: str = "correct it (or move the file away)") -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{path} {what}: {exc}.", f"{fix} and rerun; {UNCHANGED}.") from exc


def split_block(text: str, path: Path) -> tuple[str, str, str]:
    """The text before tunepack's block, the block, and the text after it ("" when there is no block)."""
    start = text.find(BEGIN)
    if start < 0:
        return text, "", ""
    end = text.find(END, start)
    if end < 0:
        raise SetupError(f"{path}: tunepack's block starts (`{BEGIN[:24]}…`) but its end line `{END}` is missing.",
                         f"put the end line back after tunepack's tables, or delete the block, and rerun; {UNCHANGED}.")
    end = text.find("\n", end)
    end = len(text) if end < 0 else end + 1
    return text[:start], text[start:end], text[end:]


def toml_after(path: Path, block: str | None, names: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The config's text before and after putting ``block`` in (None: taking tunepack's block out)."""
    text = path.read_text(encoding="utf-8") if path.exists() else None
    if text is None:
        return None, block
    _toml(text, path, "is not valid TOML")
    before, old, after = split_block(text, path)
    outside = _toml(before + after, path, "is not valid TOML without tunepack's block")
    if block is None:
        if not old:
            return text, text
        rest = (before[:-1] if before.endswith("\n") and before else before) + after
        return text, rest or None
    theirs = [n for n in names if n in (outside.get("mcp_servers") or {})]
    if theirs:
        raise SetupError(f"{path} already defines [mcp_servers.{theirs[0]}] outside tunepack's block.",
                         f"delete that table (setup writes its own, pointing at the installed tunepack) and rerun; "
                         f"{UNCHANGED}.")
    new = before + block + after if old else text + ("\n" if text else "") + block
    _toml(new, path, "would not be valid TOML with tunepack's [mcp_servers.*] tables added",
          "write your servers as [mcp_servers.NAME] tables rather than an inline `mcp_servers = {...}`")
    return text, new


def toml_has_block(path: Path) -> bool:
    return path.is_file() and BEGIN in path.read_text(encoding="utf-8")


# --- writing ----------------------------------------------------------------------------------------------

def write_text(path: Path, text: str | None) -> None:
    """Replace ``path`` with ``text`` through a temp file and a rename (None: delete); a link's target is written."""
    path = path.resolve() if path.is_symlink() else path
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, (path.stat().st_mode & 0o7777) if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def copy_tree(source: Path, dest: Path) -> None:
    """Copy a skill folder next to ``dest`` and rename it into place."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    try:
        shutil.copytree(source, tmp / dest.name, ignore=shutil.ignore_patterns(*NOT_COPIED))
        os.replace(tmp / dest.name, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def same_tree(a: Path, b: Path) -> bool:
    """Whether two folders hold the same files with the same bytes (caches aside)."""
    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*")
                if p.is_file() and not any(fnmatch(part, pattern) for part in p.relative_to(root).parts
                                           for pattern in NOT_COPIED)}
    names = files(a)
    return a.is_dir() and b.is_dir() and names == files(b) and \
        all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def prune_dirs(path: Path, stop: Path) -> None:
    """Remove the empty folders from ``path`` up to (not including) ``stop``."""
    for folder in [path, *path.parents]:
        if folder == stop or stop not in folder.parents:
            return
        try:
            folder.rmdir()
        except OSError:
            return
