"""Find the session sources under the given paths and tell their format apart.

A folder is searched recursively. An OpenCode file store (a folder with ``message/`` next to
``session/`` or ``part/``) is one source; an SQLite file with ``message`` and ``part`` tables is an
OpenCode database; every other ``.jsonl`` / ``.json`` file is one source, recognised by its first lines
(``mcp_server/sniff.py`` lists what marks each harness's sessions and chat rows).

With an explicit format every source found is read with that format.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import TraceError
from ..guard_paths import Rules, refuse_credential
from ..sniff import DB_SUFFIXES, SUFFIXES, is_storage_root, sniff
from ..walk import walk_files


def _walk(folder: Path, out: list[Path]) -> None:
    allowed = Rules().allows  # ~/.codex holds auth.json beside the sessions: never read
    out += walk_files(folder, lambda p: p.suffix in SUFFIXES + DB_SUFFIXES and allowed(p), stop_at=is_storage_root)


def find_sources(paths: Sequence[str | Path], fmt: str = "auto") -> tuple[list[tuple[str, Path]], list[str]]:
    """(format, path) per source, and the files skipped as not being sessions."""
    found: list[Path] = []
    for raw in paths:
        path = refuse_credential(Path(raw).expanduser(), "session path")
        if not path.exists():
            raise TraceError(f"The path '{raw}' does not exist.",
                             "pass session files or folders, e.g. ~/.pi/agent/sessions, ~/.claude/projects, "
                             "~/.codex/sessions, ~/.local/share/opencode/storage, ~/.factory/sessions or "
                             "~/.hermes/sessions.")
        if path.is_dir():
            _walk(path, found)
        else:
            found.append(path)
    sources, skipped = [], []
    for path in found:
        if path.is_dir():
            sources.append(("opencode", path))
            continue
        kind = sniff(path) if fmt == "auto" else fmt
        if kind is None:
            skipped.append(str(path))
        else:
            sources.append((kind, path))
    if not sources:
        shown = ", ".join(skipped[:5]) or ", ".join(map(str, paths))
        raise TraceError(f"No agent sessions were found in {shown}.",
                         "pass Pi, Claude Code, Codex, OpenCode, Factory Droid or Hermes Agent session files/folders, "
                         "or OpenAI/ShareGPT chat rows; or name the format with --format if detection failed.")
    return sources, skipped
