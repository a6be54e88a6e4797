"""Find the user's own sessions, one unit per session, each with the path it gets in a Hub repo.

With no paths, the harnesses' default folders are searched (those that exist): Pi ``~/.pi/agent/sessions``,
Claude Code ``~/.claude/projects``, Codex ``~/.codex/sessions`` and ``~/.codex/archived_sessions``, OpenCode
``~/.local/share/opencode/storage``, Factory Droid ``~/.factory/sessions`` and Hermes ``~/.hermes/sessions``.
A session file keeps its place below the folder it was found in, under one folder per harness:
``<harness>/<folder name>/<path below it>`` (``codex/sessions/2026/11/02/rollout-….jsonl``,
``claude_code/projects/-home-me-repo/<id>.jsonl``); a file given by itself goes to ``<harness>/<file name>``.
An OpenCode file store is split into its sessions: the session file with its message and part files, kept in
the store's layout (``opencode/storage/session/…``, ``…/message/<session>/…``, ``…/part/<message>/…``).
OpenCode's SQLite store (``opencode.db``) is not collected: it is one database, not session files.

Each unit carries the working directory and start time found in its first lines (``cwd``/``directory``,
``timestamp``/``started_at``/``session_start``/``time.created``) for the ``--project`` / ``--since`` filters,
and a content hash of its original bytes for incremental pushes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from ..errors import TraceError
from .detect import find_sources
from .jsonl import first_object

DEFAULT_ROOTS = (".pi/agent/sessions", ".claude/projects", ".codex/sessions", ".codex/archived_sessions",
                 ".local/share/opencode/storage", ".factory/sessions", ".hermes/sessions")
FOLDERS = {"pi": "pi", "claude-code": "claude_code", "codex": "codex", "opencode": "opencode", "droid": "droid",
           "hermes": "hermes", "openai": "openai"}
TIME_KEYS = ("timestamp", "started_at", "session_start", "created_at")


@dataclass
class Unit:
    harness: str  # the tunepack format name
    key: str  # the path of its main file in the repo (its identity across pushes)
    source: str  # where it lives here
    files: list[tuple[Path, str]] = field(default_factory=list)  # (local file, path in the repo)
    cwd: str | None = None
    started: datetime | None = None

    def digest(self) -> str:
        sha = hashlib.sha256()
        for path, repo_path in sorted(self.files, key=lambda f: f[1]):
            sha.update(repo_path.encode() + b"\0" + path.read_bytes() + b"\0")
        return sha.hexdigest()

    def size(self) -> int:
        return sum(path.stat().st_size for path, _ in self.files)

    def day(self) -> date:
        """The day the session started (UTC), else the day its main file was last written."""
        if self.started is not None:
            return self.started.date()
        return datetime.fromtimestamp(self.files[0][0].stat().st_mtime, UTC).date()


def parse_time(value) -> datetime | None:
    """An ISO string or epoch seconds/milliseconds as an aware UTC datetime; None for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(value / 1000 if value > 1e11 else value, UTC)
    if isinstance(value, str) and len(value) >= 10:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


def _holders(obj: dict) -> list[dict]:
    nested = [obj[k] for k in ("payload", "time") if isinstance(obj.get(k), dict)]
    return [obj, *nested]


def describe(objects: list[dict]) -> tuple[str | None, datetime | None]:
    """(working directory, start time) from a session's first objects."""
    cwd = started = None
    for obj in objects:
        for holder in _holders(obj):
            cwd = cwd or next((holder[k] for k in ("cwd", "directory") if isinstance(holder.get(k), str)), None)
            if started is None:
                started = next(filter(None, (parse_time(holder.get(k)) for k in (*TIME_KEYS, "created"))), None)
        if cwd and started:
            break
    return cwd, started


def _head(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        return first_object(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except ValueError:
        return []
    return [value] if isinstance(value, dict) else []


def _file_unit(fmt: str, path: Path, repo_path: str) -> Unit:
    cwd, started = describe(_head(path))
    return Unit(harness=fmt, key=repo_path, source=str(path), files=[(path, repo_path)], cwd=cwd, started=started)


def _read_info(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def opencode_units(root: Path, prefix: str) -> list[Unit]:
    """One unit per session of an OpenCode file store: its session file, messages and their parts."""
    sessions = {p.stem: p for p in sorted(root.glob("session/*/*.json"))}
    ids = sorted(set(sessions) | {p.name for p in (root / "message").iterdir() if p.is_dir()})
    units = []
    for sid in ids:
        messages = sorted((root / "message" / sid).glob("*.json"))
        files = ([sessions[sid]] if sid in sessions else []) + messages
        files += [part for m in messages for part in sorted((root / "part" / m.stem).glob("*.json"))]
        if not files:
            continue
        info = _read_info(sessions[sid]) if sid in sessions else {}
        cwd, started = describe([info] + [_read_info(m) for m in messages[:1]])
        pairs = [(f, f"{prefix}/{f.relative_to(root).as_posix()}") for f in files]
        units.append(Unit(harness="opencode", key=pairs[0][1], source=f"{root} (session {sid})", files=pairs,
                          cwd=cwd, started=started))
    return units


def _units_under(given: Path, notes: list[str]) -> list[Unit]:
    sources, skipped = find_sources([given])
    if skipped:
        notes.append(f"{len(skipped)} files under {given} are not sessions and were left out, e.g. {skipped[0]}")
    units = []
    for fmt, path in sources:
        folder = FOLDERS.get(fmt, fmt)
        if given.is_file():
            repo_path = f"{folder}/{path.name}"
        else:
            repo_path = f"{folder}/{given.name}/{path.relative_to(given).as_posix()}" if path != given else ""
        if path.is_dir():  # an OpenCode file store
            prefix = f"{folder}/{path.name}" if path == given else repo_path
            units.extend(opencode_units(path, prefix))
        elif fmt == "opencode" and path.suffix != ".json":
            notes.append(f"not collected: {path} is OpenCode's SQLite store; export sessions with `opencode export "
                         "<id> > s.json` and push those files")
        else:
            units.append(_file_unit(fmt, path, repo_path))
    return units


def default_roots() -> list[Path]:
    return [root for root in (Path.home() / r for r in DEFAULT_ROOTS) if root.is_dir()]


def collect(paths: list[str] | None) -> tuple[list[Unit], list[str]]:
    """The sessions under ``paths`` (default: the harnesses' own folders), and notes on what was left out."""
    notes: list[str] = []
    given = [Path(p).expanduser() for p in paths or []]
    roots = given or default_roots()
    if not roots:
        raise TraceError("No agent session folders were found in the default places (" +
                         ", ".join(f"~/{r}" for r in DEFAULT_ROOTS) + ").",
                         "pass the session files or folders to push, e.g. tunepack traces push ~/my-sessions --repo NS/NAME.")
    units: list[Unit] = []
    for root in roots:
        _check_root(root)
        try:
            units.extend(_units_under(root, notes))
        except TraceError:
            if given:
                raise
            notes.append(f"no sessions in {root}")
    return _unique(units, notes), notes


def _check_root(root: Path) -> None:
    """A path that exists and is narrower than the whole disk or the home folder."""
    try:
        exists = root.exists()
        broad = root.resolve() in (Path(root.anchor), Path.home().resolve())
    except (OSError, ValueError) as exc:
        raise TraceError(f"The path '{str(root)[:200]}' cannot be read ({type(exc).__name__}).",
                         "pass session files or folders that exist.") from None
    if not exists:
        raise TraceError(f"The path '{str(root)[:200]}' does not exist.", "pass session files or folders that exist.")
    if broad:
        raise TraceError(f"'{root}' is the whole disk or home folder, not a folder of sessions.",
                         "pass the harnesses' session folders (or none: their default folders are used).")


def _unique(units: list[Unit], notes: list[str]) -> list[Unit]:
    seen: dict[str, Unit] = {}
    for unit in units:
        if unit.key in seen:
            notes.append(f"skipped {unit.source}: {seen[unit.key].source} has the same repo path {unit.key}; "
                         "push them separately (to different repos)")
            continue
        seen[unit.key] = unit
    return list(seen.values())


def inside(cwd: str, project: str) -> bool:
    """Whether the session's working directory is the project folder or below it."""
    root = os.path.normpath(str(Path(project).expanduser().resolve()))
    here = os.path.normpath(cwd)
    return here == root or here.startswith(root.rstrip(os.sep) + os.sep)
