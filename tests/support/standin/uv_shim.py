"""``uv`` as the stand-in's jobs see it (``/.standin/bin/uv`` runs ``python -I`` on this file).

Only ``uv run [OPTIONS] SCRIPT [ARGS...]`` (and ``uv run python ...``) is supported. The "package index" is
the test environment itself: a dependency resolves only to the version installed here, so the script's
PEP 723 block (``# /// script`` … ``# ///``, read with tomllib) must parse, its ``requires-python`` must
admit this Python, and every requirement (``dependencies`` and ``--with``) must be installed and satisfied
by the installed version (a different ``==`` pin fails, naming both versions). Any failure prints a
uv-like error and exits 2. Then uv's cache is emulated: ``$UV_CACHE_DIR`` (else ``$HOME/.cache/uv``) holds
a marker named by a hash of the resolved list: present → ``Audited N packages`` ("reused"), absent →
``Installed N packages`` and the marker is written. The outcome is appended to
``/.standin/job/installs.jsonl`` (``{"installed": bool, "packages": N}``; the stand-in adds the job id),
and the script runs as ``os.execv(sys.executable, [sys.executable, SCRIPT, *ARGS])``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
import tomllib
from importlib import metadata

RECORD = "/.standin/job/installs.jsonl"
BLOCK = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
FLAGS = {"-q", "--quiet", "-v", "--verbose", "--no-project", "--script", "--isolated", "--no-cache", "--frozen",
         "--offline", "--no-sync", "--exact"}
VALUED = {"--with", "-p", "--python", "--index-url", "--extra-index-url", "--index"}


class UvError(Exception):
    pass


def split_with(value: str) -> list[str]:
    """``--with "flask, requests>=2.1,<3"`` as uv reads it (astral-sh/uv#9089): a comma starts a new requirement
    unless what follows is another version specifier of the same one."""
    out: list[str] = []
    for piece in (p.strip() for p in value.split(",")):
        if not piece:
            continue
        if out and piece[0] in "<>=!~":
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


def parse_run(argv: list[str]) -> tuple[dict, str, list[str]]:
    opts: dict = {"with": [], "flags": set()}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in VALUED:
            if not eq:
                i += 1
                if i >= len(argv):
                    raise UvError(f"error: a value is required for '{name} <VALUE>' but none was supplied")
                value = argv[i]
            if name == "--with":
                opts["with"] += split_with(value)
        elif arg in FLAGS:
            opts["flags"].add(arg)
        elif arg == "--":
            i += 1
            break
        else:
            raise UvError(f"error: unexpected argument '{arg}' found\n\nUsage: uv run [OPTIONS] [COMMAND]")
        i += 1
    if i >= len(argv):
        raise UvError("error: the following required arguments were not provided:\n  <COMMAND>")
    return opts, argv[i], argv[i + 1:]


def script_metadata(path: str, text: str) -> dict:
    blocks = [m for m in BLOCK.finditer(text) if m.group("type") == "script"]
    if len(blocks) > 1:
        raise UvError(f"error: Failed to parse: `{path}`\n  Caused by: Multiple `script` blocks found")
    if not blocks:
        if re.search(r"(?m)^# /// script\s*$", text):
            raise UvError(f"error: Failed to parse: `{path}`\n  Caused by: An opening tag (`# /// script`) was "
                          "found without a closing tag (`# ///`). Ensure that every line between the opening and "
                          "closing tags (including empty lines) starts with a leading `#`.")
        return {}
    content = "".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in blocks[0].group("content").splitlines(keepends=True))
    try:
        return tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        raise UvError(f"error: Failed to parse: `{path}`\n  Caused by: TOML parse error: {exc}") from None


def check_python(meta: dict) -> None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    wanted = meta.get("requires-python")
    if not wanted:
        return
    try:
        ok = SpecifierSet(wanted).contains(platform.python_version(), prereleases=True)
    except InvalidSpecifier as exc:
        raise UvError(f"error: Failed to parse `requires-python`: {exc}") from None
    if not ok:
        raise UvError(f"error: No interpreter found for Python {wanted} in managed installations or search path "
                      f"(the job's Python is {platform.python_version()})")


def resolve(requirements: list[str]) -> list[str]:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    resolved = set()
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise UvError(f"error: Failed to parse: `{text}`\n  Caused by: {exc}") from None
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = canonicalize_name(req.name)
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            raise UvError("  × No solution found when resolving script dependencies:\n"
                          f"  ╰─▶ Because {name} was not found in the package registry and you require {text}, "
                          "we can conclude that your requirements are unsatisfiable.") from None
        if req.specifier and not req.specifier.contains(installed, prereleases=True):
            raise UvError(f"  × No solution found when resolving script dependencies:\n  ╰─▶ Because only "
                          f"{name}=={installed} is available and you require {name}{req.specifier}, we can "
                          "conclude that your requirements are unsatisfiable.")
        resolved.add(f"{name}=={installed}")
    return sorted(resolved)


def use_cache(resolved: list[str], no_cache: bool) -> bool:
    """True when the environment was 'installed' now, False when an earlier one was reused."""
    cache = os.environ.get("UV_CACHE_DIR") or os.path.join(os.environ.get("HOME", "/root"), ".cache", "uv")
    digest = hashlib.sha256(("\n".join(resolved) + "\n" + platform.python_version()).encode()).hexdigest()[:20]
    marker = os.path.join(cache, "environments-v2", f"standin-{digest}")
    if os.path.exists(marker) and not no_cache:
        if resolved:
            print(f"Audited {len(resolved)} packages in 0.41ms", file=sys.stderr)
        return False
    try:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        with open(marker, "w") as handle:
            handle.write("\n".join(resolved) + "\n")
    except OSError as exc:
        raise UvError(f"error: Failed to initialize cache at `{cache}`\n  Caused by: {exc}") from None
    if resolved:
        print(f"Resolved {len(resolved)} packages in 3ms\nInstalled {len(resolved)} packages in 12ms",
              file=sys.stderr)
    return True


def record(installed: bool, packages: int) -> None:
    if os.path.isdir(os.path.dirname(RECORD)):
        with open(RECORD, "a") as handle:
            handle.write(json.dumps({"installed": installed, "packages": packages}) + "\n")


def run(argv: list[str]) -> None:
    opts, target, args = parse_run(argv)
    if target in ("python", "python3", os.path.basename(sys.executable)):
        meta, script = {}, None
    else:
        try:
            with open(target, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise UvError(f"error: Failed to spawn: `{target}`\n  Caused by: {exc.strerror} "
                          f"(os error {exc.errno})") from None
        meta, script = script_metadata(target, text), target
    check_python(meta)
    resolved = resolve(list(meta.get("dependencies") or []) + opts["with"])
    installed = use_cache(resolved, "--no-cache" in opts["flags"])
    record(installed, len(resolved))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *([script] if script else []), *args])


def main(argv: list[str]) -> None:
    try:
        if not argv or argv[0] in ("-h", "--help", "help"):
            raise UvError("Usage: uv run [OPTIONS] SCRIPT [ARGS]... (the only subcommand the stand-in's uv knows)")
        if argv[0] in ("--version", "-V", "version"):
            print("uv 0.9.0 (stand-in)")
            return
        if argv[0] != "run":
            raise UvError(f"error: the stand-in's uv only knows `uv run`, not `uv {argv[0]}`")
        run(argv[1:])
    except UvError as exc:
        print(exc, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
