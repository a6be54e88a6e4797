"""Writing under a root folder through directory file descriptors, so that a link swapped in while we write
redirects nothing.

``confine.py`` checks every path before setup writes; between that check and the write an agent with a shell can
replace a folder with a link to somewhere else (a race: check, then write). Here the root is opened once
(``O_DIRECTORY | O_NOFOLLOW``) and every path below it is reached one component at a time, each opened relative to
its parent's descriptor with ``O_NOFOLLOW``; files are written, renamed, linked and removed with ``dir_fd=``. A link
met on the way is read (``readlink``) and its target walked the same way: one that stays inside the root is
followed (a project that links ``.claude/skills`` to its own ``skills/``), one that leads out of it — an absolute
target elsewhere, or ``..`` above the root — raises ``SetupError`` naming the link, and nothing is written through
it. What is swapped in after a folder was opened changes nothing: its descriptor still names the folder opened.

    with Beneath(project, "the project") as root:
        root.write_text(project / ".claude" / "settings.json", text)
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import secrets
import shutil
import stat
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any

from ..errors import SetupError
from .confine import Escape, refusal

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_LINKS = 40  # as the kernel's own limit on the links one lookup follows (ELOOP)
_FLOOR = "\0floor"  # a marker among the components still to walk (no file name holds a NUL): a link's target ends


class _Walk:
    """The folders opened on the way down: ``fds[0]`` is the root (owned by ``Beneath``), ``names[i]`` the name
    ``fds[i]`` has in ``fds[i - 1]``; ``floor``: the first level below where the last link led (pruning stops
    there, as ``rmdir`` of the link's own path would)."""

    def __init__(self, root_fd: int, root: Path):
        self.fds = [root_fd]
        self.names = [""]
        self.shown = [root]  # the path as the person would name it, for messages
        self.floor = 1

    @property
    def fd(self) -> int:
        return self.fds[-1]

    def push(self, fd: int, name: str) -> None:
        self.fds.append(fd)
        self.names.append(name)
        self.shown.append(self.shown[-1] / name)

    def pop(self) -> None:
        os.close(self.fds.pop())
        self.names.pop()
        self.shown.pop()

    def close(self) -> None:
        while len(self.fds) > 1:
            self.pop()


class Beneath:
    """A root folder held open; every write below it goes through descriptors (see the module docstring).
    ``where``: how messages name the root ("the project"); ``fix_hint``: more of the fix; ``who``: the command."""

    def __init__(self, root: Path, where: str, fix_hint: str = "", who: str = "setup"):
        self.root = Path(root)
        self.real = Path(os.path.realpath(root))  # only to read absolute link targets that name it this way
        self.where, self.fix_hint, self.who = where, fix_hint, who
        os.makedirs(self.root, exist_ok=True)  # a folder CODEX_HOME names may not exist yet
        self.fd = os.open(self.root, _DIR)  # the root itself swapped for a link: ELOOP, nothing written

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    # --- what setup does ----------------------------------------------------------------------------------------

    def write_text(self, path: Path, text: str | None) -> None:
        """Replace the file with ``text`` through a temp file and a rename in its folder (None: delete it); a link
        there that stays inside the root has its target written, as an editor would."""
        if text is None:
            with contextlib.suppress(FileNotFoundError):
                self._at(path, "follow", _unlink)
            return
        self._at(path, "follow", lambda fd, name: _replace_file(fd, name, text), make=True)

    def remove(self, path: Path) -> None:
        """Remove the file or link itself (a link there is never followed)."""
        with contextlib.suppress(FileNotFoundError):
            self._at(path, "name", _unlink)

    def link(self, path: Path, target: str) -> None:
        """Make ``path`` a link to ``target``: a new link renamed over whatever is there."""
        def make(fd: int, name: str) -> None:
            tmp = f".{name}.tunepack-link"
            _unlink(fd, tmp)
            os.symlink(target, tmp, dir_fd=fd)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        self._at(path, "name", make, make=True)

    def copy_tree(self, source: Path, path: Path, skip: tuple[str, ...] = ()) -> None:
        """Copy the folder ``source`` (the package's own) to ``path``: into a temp folder beside it, then renamed
        into place. ``skip``: name patterns left out."""
        def copy(fd: int, name: str) -> None:
            tmp = f".{name}.{secrets.token_hex(4)}"
            os.mkdir(tmp, 0o777, dir_fd=fd)
            try:
                top = os.open(tmp, _DIR, dir_fd=fd)
                try:
                    _copy_into(source, top, skip)
                finally:
                    os.close(top)
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                shutil.rmtree(tmp, dir_fd=fd, ignore_errors=True)
                raise
        self._at(path, "name", copy, make=True)

    def remove_tree(self, path: Path) -> None:
        """Remove a folder and everything in it (shutil refuses a link there, it never follows one)."""
        self._at(path, "name", lambda fd, name: shutil.rmtree(name, dir_fd=fd))

    def prune(self, path: Path) -> None:
        """Remove the empty folders from ``path`` up to (not including) the root; stop at the first that is not
        empty, and where a link led (as ``rmdir`` of the link's own path would)."""
        try:
            walk, _ = self._walk(path, "dir")
        except (OSError, SetupError):
            return
        try:
            while len(walk.fds) > max(1, walk.floor):
                name = walk.names[-1]
                walk.pop()
                try:
                    os.rmdir(name, dir_fd=walk.fd)
                except OSError:
                    return
        finally:
            walk.close()

    # --- the walk ---------------------------------------------------------------------------------------------

    def _at(self, path: Path, last: str, action: Callable[[int, str], Any], make: bool = False) -> Any:
        """``action(folder_fd, name)`` for ``path``, the folders above it held open while it runs (``make``: made
        when missing)."""
        walk, name = self._walk(path, last, make)
        try:
            return action(walk.fd, name)
        finally:
            walk.close()

    def _walk(self, path: Path, last: str, make: bool = False) -> tuple[_Walk, str]:
        """Open the folders down to ``path`` (under the root, or relative to it) and return them with the last
        component's name. ``last``: "name" (the last component is not looked at: it is replaced or removed itself),
        "follow" (a link there is followed, inside the root only) or "dir" (every component is a folder; no name is
        returned). ``make``: a missing folder on the way is made."""
        walk = _Walk(self.fd, self.root)
        pending = list(path.relative_to(self.root).parts if path.is_absolute() else path.parts)
        hops = again = 0
        try:
            while pending:
                part = pending[0]
                if part in ("", "."):
                    pending.pop(0)
                elif part == _FLOOR:
                    pending.pop(0)
                    walk.floor = len(walk.fds)
                elif part == "..":
                    if len(walk.fds) == 1:  # _after_link already refuses this; a path given with '..' might not
                        raise self._escape(walk, part, str(path))
                    pending.pop(0)
                    walk.pop()
                elif len(pending) == 1 and last in ("name", "follow"):
                    target = _readlink(walk.fd, part) if last == "follow" else None
                    if target is None:
                        return walk, part
                    hops = _hop(hops, walk, part)
                    pending = self._after_link(walk, part, target, [])
                else:
                    fd, target = _open_dir(walk.fd, part, make)
                    if fd is not None:
                        walk.push(fd, part)
                        pending.pop(0)
                        continue
                    if target is None:  # made just now, or it changed while we looked: look again
                        again = _hop(again, walk, part)
                        continue
                    hops = _hop(hops, walk, part)
                    pending = self._after_link(walk, part, target, pending[1:])
            return walk, ""
        except BaseException:
            walk.close()
            raise

    def _after_link(self, walk: _Walk, name: str, target: str, rest: list[str]) -> list[str]:
        """The components still to walk once the link ``name`` (in the current folder) is followed; SetupError
        naming it when its target lies outside the root."""
        if os.path.isabs(target):
            base = next((b for b in (self.real, self.root) if Path(target).is_relative_to(b)), None)
            if base is None:
                raise self._escape(walk, name, target)
            parts, depth = list(Path(target).relative_to(base).parts), 0
        else:
            parts, depth = list(PurePath(target).parts), len(walk.fds) - 1
        for part in parts:  # '..' above the root leads out of it, whatever follows
            depth += -1 if part == ".." else 0 if part == "." else 1
            if depth < 0:
                raise self._escape(walk, name, target)
        if os.path.isabs(target):
            walk.close()  # back to the root, then down the target's path
        return [*parts, _FLOOR, *rest] if rest else parts

    def _escape(self, walk: _Walk, name: str, target: str) -> SetupError:
        link = walk.shown[-1] / name
        return refusal([Escape(link, target, os.path.realpath(link), self.root)], self.where, self.fix_hint,
                       self.who, during=True)


def _hop(hops: int, walk: _Walk, name: str) -> int:
    """One more link followed (or one more look at a name that changed); ELOOP past ``MAX_LINKS``."""
    if hops >= MAX_LINKS:
        raise OSError(errno.ELOOP, "Too many levels of symbolic links (or a link that keeps changing)",
                      str(walk.shown[-1] / name))
    return hops + 1


def _open_dir(fd: int, name: str, make: bool) -> tuple[int | None, str | None]:
    """(the folder's descriptor, None); (None, the target) when ``name`` is a link; (None, None) when it was missing
    and is now made (``make``), or changed while we looked: look again."""
    try:
        return os.open(name, _DIR, dir_fd=fd), None
    except FileNotFoundError:
        if not make:
            raise
        with contextlib.suppress(FileExistsError):  # made meanwhile: opened (or read as a link) next time
            os.mkdir(name, 0o777, dir_fd=fd)
        return None, None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        target = _readlink(fd, name)
        if target is None and not stat.S_ISDIR(_mode(fd, name)):
            raise  # a file where a folder should be
        return None, target


def _mode(fd: int, name: str) -> int:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return stat.S_IFDIR  # gone meanwhile: look again


def _readlink(fd: int, name: str) -> str | None:
    """The target of the link ``name`` in the folder ``fd``; None when it is not a link (or not there)."""
    try:
        return os.readlink(name, dir_fd=fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return None
        raise


def _unlink(fd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=fd)


def _replace_file(fd: int, name: str, text: str) -> None:
    try:
        mode = stat.S_IMODE(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        mode = 0o644
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    out = os.open(tmp, _NEW_FILE, 0o600, dir_fd=fd)
    try:
        with os.fdopen(out, "w", encoding="utf-8") as handle:
            handle.write(text)
            os.fchmod(handle.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        _unlink(fd, tmp)
        raise


def _copy_into(source: Path, fd: int, skip: tuple[str, ...]) -> None:
    for entry in sorted(source.iterdir()):
        if any(fnmatch.fnmatch(entry.name, pattern) for pattern in skip):
            continue
        if entry.is_dir():
            os.mkdir(entry.name, 0o777, dir_fd=fd)
            sub = os.open(entry.name, _DIR, dir_fd=fd)
            try:
                _copy_into(entry, sub, skip)
            finally:
                os.close(sub)
            continue
        out = os.open(entry.name, _NEW_FILE, 0o600, dir_fd=fd)
        with os.fdopen(out, "wb") as handle:
            handle.write(entry.read_bytes())
            os.fchmod(handle.fileno(), stat.S_IMODE(entry.stat().st_mode))


__all__ = ["MAX_LINKS", "Beneath"]
