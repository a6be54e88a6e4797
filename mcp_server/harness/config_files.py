"""Editing other people's harness configs without losing anything of theirs: merge tunepack's entries into a
JSON file and take exactly those out again; put tunepack's tables into a Codex config.toml as one marked block
(their comments and order stay byte for byte); compare skill folders (``beneath.py`` writes them).

Every reader refuses a malformed file with ``SetupError`` (what is wrong, where, what to do) before anything is
written: invalid JSON or TOML, text that is not UTF-8, nesting deeper than ``MAX_DEPTH``, a JSON top level that is
not an object, something that is not a regular file. The file is left as it was.
"""

from __future__ import annotations

import filecmp
import json
import re
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from ..errors import SetupError

UNCHANGED = "setup changed nothing"
MAX_DEPTH = 100  # no harness config nests this deep; deeper is damage (or a trap for a recursive reader)
MOVE_AWAY = "or move it away (keep a copy) and rerun"
NOT_COPIED = ("__pycache__", "*.pyc", "*.lock")  # caches, and the lock pitfall writers take


@dataclass
class JsonPart:
    """tunepack's entries in one JSON file: ``values`` replace a key (path → value), ``items`` join a list."""

    values: dict[tuple[str, ...], object] = field(default_factory=dict)
    items: dict[tuple[str, ...], list] = field(default_factory=dict)
    skeleton: dict = field(default_factory=dict)  # what a new file starts with (and what an emptied one holds)
    # keys that may also hold one action string for everything inside (OpenCode's `"bash": "ask"`): a string listed
    # here already covers tunepack's entries (they are not added); any other string s becomes {"*": s} followed by
    # tunepack's entries (the same rules: the last match wins), and s again when remove leaves only {"*": s}
    actions: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)


def owned(path: tuple[str, ...]) -> bool:
    """tunepack's own server entries: setup updates them, remove takes them out whatever they hold. Every other key
    (a permission, a role) is theirs once it holds something else: setup keeps it, remove leaves it."""
    return len(path) == 2 and path[0] in ("mcp", "mcpServers") and "tunepack" in path[1]


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "…"


# --- reading ----------------------------------------------------------------------------------------------

def read_text(path: Path) -> str | None:
    """A config file's text, None when it is absent (or a link to nothing yet); ``SetupError`` when it cannot be
    read as UTF-8 text."""
    if not path.exists():
        return None
    if not path.is_file():
        raise SetupError(f"{path} is not a regular file (setup reads and rewrites it as a config file).",
                         f"put a config file there, {MOVE_AWAY}; {UNCHANGED}.")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SetupError(f"{path} is not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}.",
                         f"save it as UTF-8, {MOVE_AWAY}; {UNCHANGED}.") from exc
    except OSError as exc:
        raise SetupError(f"{path} cannot be read: {exc.strerror or exc}.",
                         f"make it readable, {MOVE_AWAY}; {UNCHANGED}.") from exc


def depth(doc: object) -> int:
    """How deep objects and lists nest (a scalar: 0, ``{}``: 1), without recursion; stops past ``MAX_DEPTH``."""
    deepest, stack = 0, [(doc, 1)]
    while stack and deepest <= MAX_DEPTH:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


def _too_deep(path: Path) -> SetupError:
    return SetupError(f"{path} nests more than {MAX_DEPTH} levels deep: no harness config does (a damaged file?).",
                      f"fix it, {MOVE_AWAY}; {UNCHANGED}.")


# --- JSON -------------------------------------------------------------------------------------------------

def read_json(path: Path) -> tuple[dict | None, str | None]:
    """The document and its text, (None, None) when the file is absent."""
    text = read_text(path)
    if text is None:
        return None, None
    try:
        doc = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        extra = " (comments or trailing commas?)" if path.suffix == ".jsonc" else ""
        raise SetupError(f"{path} is not valid JSON{extra}: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
                         f"correct that spot, {MOVE_AWAY}; {UNCHANGED}.") from exc
    except RecursionError as exc:
        raise _too_deep(path) from exc
    except ValueError as exc:  # e.g. an integer longer than Python converts
        raise SetupError(f"{path} is not JSON setup can read: {exc}.", f"fix it, {MOVE_AWAY}; {UNCHANGED}.") from exc
    if depth(doc) > MAX_DEPTH:
        raise _too_deep(path)
    if not isinstance(doc, dict):
        kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(doc), "number")
        raise SetupError(f"{path} holds a JSON {kind}, not an object.",
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


def _action_on(doc: dict, path: tuple[str, ...], part: JsonPart, file: Path) -> tuple[dict, tuple[str, ...]] | None:
    """A key on ``path`` that holds one action string instead of an object: (its parent, its path)."""
    for n in range(1, len(path)):
        container = path[:n]
        parent = _node(doc, container[:-1], file, create=False) if container in part.actions else None
        if parent is not None and isinstance(parent.get(container[-1]), str):
            return parent, container
    return None


def _covered(doc: dict, path: tuple[str, ...], part: JsonPart, file: Path) -> bool:
    """Whether a key on ``path`` holds an action string that already covers this entry; any other action string
    there is opened up into ``{"*": action}`` so that tunepack's entries can follow it."""
    found = _action_on(doc, path, part, file)
    if found is None:
        return False
    parent, container = found
    action = parent[container[-1]]
    if action in part.actions[container]:
        return True
    parent[container[-1]] = {"*": action}
    return False


def _close_actions(doc: dict, containers: set[tuple[str, ...]], file: Path) -> None:
    """Give back the action string that merging opened up, once only ``{"*": action}`` is left."""
    for container in containers:
        parent = _node(doc, container[:-1], file, create=False)
        held = parent.get(container[-1]) if parent is not None else None
        if isinstance(held, dict) and list(held) == ["*"] and isinstance(held["*"], str):
            parent[container[-1]] = held["*"]  # type: ignore[index]


def merge_json(doc: dict, part: JsonPart, file: Path) -> list[str]:
    """Put ``part`` into ``doc`` (in place). Returns the keys of theirs that were kept instead of tunepack's."""
    kept = []
    for path, value in part.values.items():
        if _covered(doc, path, part, file):
            continue
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
    emptied: set[tuple[str, ...]] = set()
    for path, value in part.values.items():
        node = None if _action_on(doc, path, part, file) else _node(doc, path[:-1], file, create=False)
        if node is not None and path[-1] in node and (owned(path) or node[path[-1]] == value):
            del node[path[-1]]
            _prune(doc, path[:-1])
            emptied |= {path[:n] for n in range(1, len(path)) if path[:n] in part.actions}
    for path, items in part.items.items():
        found = _list(doc, path, file, create=False)
        if found is not None:
            found[:] = [item for item in found if item not in items]
            _prune(doc, path)
    _close_actions(doc, emptied, file)


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


def _toml(text: str, path: Path, what: str, fix: str = f"correct it, {MOVE_AWAY}") -> dict:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{path} {what}: {exc}.", f"{fix}; {UNCHANGED}.") from exc
    except RecursionError as exc:
        raise _too_deep(path) from exc
    except ValueError as exc:  # e.g. an integer longer than Python converts
        raise SetupError(f"{path} {what}: {exc}.", f"{fix}; {UNCHANGED}.") from exc
    if depth(doc) > MAX_DEPTH:
        raise _too_deep(path)
    return doc


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
    text = read_text(path)
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
          "write your servers as [mcp_servers.NAME] tables rather than an inline `mcp_servers = {...}`, and rerun")
    return text, new


def toml_has_block(path: Path) -> bool:
    """Whether the config has tunepack's block (an unreadable file counts as having it: leave things alone)."""
    try:
        return BEGIN in (read_text(path) or "")
    except SetupError:
        return True


def same_tree(a: Path, b: Path) -> bool:
    """Whether two folders hold the same files with the same bytes (caches aside)."""
    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*")
                if p.is_file() and not any(fnmatch(part, pattern) for part in p.relative_to(root).parts
                                           for pattern in NOT_COPIED)}
    names = files(a)
    return a.is_dir() and b.is_dir() and names == files(b) and \
        all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)
