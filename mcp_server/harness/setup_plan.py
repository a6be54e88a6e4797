"""What ``tunepack setup opencode|codex|claude`` would change, planned and checked (``setup.py`` writes it): tunepack
added to any project (or to your user-level harness config) with no clone, the same pieces ``render.py`` makes for
this repository, pointed at the installed ``tunepack serve``.

What goes where (project scope; ``--user`` writes the same into the harness's user folders, under HOME):

| harness  | servers + spending asks                          | roles                 | commands            |
|----------|--------------------------------------------------|-----------------------|---------------------|
| opencode | opencode.json (mcp, tools, permission[.bash])    | opencode.json (agent) | .opencode/command/  |
| codex    | .codex/config.toml (one marked block) + rules/   | .codex/agents/        | (the MCP prompts)   |
| claude   | .mcp.json + .claude/settings.json                | .claude/agents/       | .claude/commands/   |

The asks cover the spending MCP tools and tunepack's paid or publishing shell commands (``PAID_COMMANDS``).

Skills: one copy of the installed package's skills in ``.agents/skills/`` (OpenCode and Codex read it; Claude Code
gets links in ``.claude/skills/``). Both servers run with ``TUNEPACK_SKILLS_DIR`` set to that copy, so the pitfalls
``skills_add_pitfall`` records land in the project's copy, not in the installed package.

Setup never takes a key of theirs: a same-named role, command or skill of theirs is kept and reported. A second run
changes nothing; ``--remove`` takes out what setup added (their keys stay); ``--dry-run`` prints the diff.

Nothing is written until every change is planned and checked: a malformed config, or a link (a file, or a folder
above one) that leads out of the project — for ``--user``, out of HOME or the folder CODEX_HOME / CLAUDE_CONFIG_DIR /
XDG_CONFIG_HOME names — refuses the whole run (``confine.py``); links that stay inside are followed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import settings
from ..errors import SetupError
from ..resources import skills_dir
from .catalog import COMMANDS, LAUNCHER, ROLES, SERVER, STUDY_SERVER, STUDY_TOOLSETS
from .config_files import BEGIN, END, JsonPart, json_after, json_has, same_tree, toml_after, toml_has_block
from .confine import refuse_escapes
from .render import (
    OPENCODE_SCHEMA,
    Launch,
    claude_agent,
    claude_command,
    claude_mcp_servers,
    claude_settings,
    codex_agent,
    codex_rules,
    codex_servers,
    opencode_command,
    opencode_tunepack,
)

HARNESSES = ("opencode", "codex", "claude")
NAMES = {"opencode": "OpenCode", "codex": "Codex", "claude": "Claude Code"}
CHECK = {"opencode": "opencode mcp list", "codex": "codex mcp list", "claude": "claude mcp list"}
USER_DIRS = ("XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR")  # user-scope folders an environment can move


@dataclass(frozen=True)
class Scope:
    """Where one harness's files go: a project folder, or the user's folders (``user``; ``base`` is HOME)."""

    base: Path
    user: bool
    env: Mapping[str, str]

    @property
    def skills(self) -> Path:
        return self.base / ".agents" / "skills"

    def _env_dir(self, name: str, default: Path) -> Path:
        # resolved, as HOME and the project are: the root setup writes under is a real folder, opened O_NOFOLLOW
        return Path(self.env[name]).expanduser().resolve() if self.env.get(name) else default

    def opencode_config(self) -> Path:
        folder = self._env_dir("XDG_CONFIG_HOME", self.base / ".config") / "opencode" if self.user else self.base
        json_file, jsonc = folder / "opencode.json", folder / "opencode.jsonc"
        return jsonc if jsonc.exists() and not json_file.exists() else json_file

    def opencode_commands(self) -> Path:
        return self.opencode_config().parent / ("command" if self.user else ".opencode/command")

    def codex_dir(self) -> Path:
        return self._env_dir("CODEX_HOME", self.base / ".codex") if self.user else self.base / ".codex"

    def claude_dir(self) -> Path:
        return self._env_dir("CLAUDE_CONFIG_DIR", self.base / ".claude") if self.user else self.base / ".claude"

    def claude_servers(self) -> Path:
        """Claude Code's project .mcp.json, or for the user its ~/.claude.json (in CLAUDE_CONFIG_DIR when set)."""
        if not self.user:
            return self.base / ".mcp.json"
        return self._env_dir("CLAUDE_CONFIG_DIR", self.base) / ".claude.json"

    def roots(self) -> list[Path]:
        """The folders setup writes under: the project; for --user HOME and each folder named outside it."""
        if not self.user:
            return [self.base]
        named = [self._env_dir(name, self.base) for name in USER_DIRS]
        return [self.base, *(p for p in named if not p.is_relative_to(self.base))]

    def root_of(self, path: Path) -> Path:
        return next(root for root in self.roots() if path.is_relative_to(root))

    def show(self, path: Path) -> str:
        if path.is_relative_to(self.base):
            return ("~/" if self.user else "") + str(path.relative_to(self.base))
        return str(path)


@dataclass
class Change:
    path: Path
    kind: str  # "file" (text), "skill" (a copied folder: before/after name the package's folder), "link"
    before: str | None
    after: str | None  # None: removed


@dataclass
class Plan:
    harness: str
    scope: Scope
    remove: bool
    changes: list[Change] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


@dataclass
class _Spec:
    """One harness's share: JSON entries per file, the Codex block, whole files (roles, commands), skill links."""

    json: list[tuple[Path, JsonPart]] = field(default_factory=list)
    toml: tuple[Path, str] | None = None
    files: dict[Path, str] = field(default_factory=dict)
    skill_links: Path | None = None


# --- what each harness gets ------------------------------------------------------------------------------------

def serve_argv() -> tuple[str, ...]:
    """The installed server: the ``tunepack`` console script beside this interpreter, else ``python -m``."""
    script = Path(sys.executable).parent / "tunepack"
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script.absolute()), "serve")
    return (str(Path(sys.executable).absolute()), "-m", "mcp_server.cli", "serve")


def programs() -> tuple[str, ...]:
    """How an agent may spell the CLI: ``tunepack`` on PATH, and the installed script's own path."""
    argv = serve_argv()
    return ("tunepack", argv[0]) if argv[1:] == ("serve",) else ("tunepack",)


def launches(skills: Path) -> dict[str, Launch]:
    env = (("TUNEPACK_SKILLS_DIR", str(skills)),)
    return {SERVER: Launch(serve_argv(), env),
            STUDY_SERVER: Launch(serve_argv(), env + (("TUNEPACK_TOOLSETS", ",".join(STUDY_TOOLSETS)),))}


def _skills_note(scope: Scope) -> str:
    return f"tunepack's skills are in `{scope.show(scope.skills)}/tunepack-*`; read them with skills_read."


def _opencode(scope: Scope) -> _Spec:
    part = opencode_tunepack(launches(scope.skills), programs())
    bash = part["permission"].pop("bash")
    values: dict[tuple[str, ...], object] = {(top, key): value for top, entries in part.items()
                                             for key, value in entries.items()}
    values |= {("permission", "bash", pattern): action for pattern, action in bash.items()}
    # their `"bash": "ask"` (or "deny") already asks before every command: it stays as it is
    json_part = JsonPart(values, skeleton={"$schema": OPENCODE_SCHEMA},
                         actions={("permission", "bash"): ("ask", "deny")})
    folder = scope.opencode_commands()
    return _Spec(json=[(scope.opencode_config(), json_part)],
                 files={folder / f"{c.name}.md": opencode_command(c, _skills_note(scope)) for c in COMMANDS})


def codex_block(scope: Scope) -> str:
    tables = codex_servers(launches(scope.skills)).rstrip("\n")
    return f"{BEGIN}\n{tables}\n{END}\n"


def _codex(scope: Scope) -> _Spec:
    folder = scope.codex_dir()
    banner = "Written by `tunepack setup codex`; `tunepack setup codex --remove` takes it out."
    files = {folder / "agents" / f"{r.name}.toml": codex_agent(r, banner) for r in ROLES}
    files[folder / "rules" / "tunepack.rules"] = codex_rules(programs(), banner)
    return _Spec(toml=(folder / "config.toml", codex_block(scope)), files=files)


def _claude(scope: Scope) -> _Spec:
    folder = scope.claude_dir()
    entries = claude_mcp_servers(launches(scope.skills))
    servers = JsonPart({("mcpServers", name): entry for name, entry in entries.items()})
    # project servers start once the settings name them (and the folder is trusted); user servers need no naming
    settings = claude_settings(project_servers=not scope.user, programs=programs())
    lists: dict[tuple[str, ...], list] = {("permissions", kind): names
                                          for kind, names in settings.pop("permissions").items()}
    lists |= {(key,): names for key, names in settings.items()}
    files = {folder / "agents" / f"{r.name}.md": claude_agent(r) for r in ROLES}
    files |= {folder / "commands" / f"{c.name}.md": claude_command(c, _skills_note(scope)) for c in COMMANDS}
    return _Spec(json=[(scope.claude_servers(), servers), (folder / "settings.json", JsonPart(items=lists))],
                 files=files, skill_links=folder / "skills")


SPECS = {"opencode": _opencode, "codex": _codex, "claude": _claude}


def configured(harness: str, scope: Scope) -> bool:
    """Whether the harness's config in this scope still has tunepack's server (then the skills copy stays)."""
    if harness == "opencode":
        return json_has(scope.opencode_config(), ("mcp", SERVER))
    if harness == "codex":
        return toml_has_block(scope.codex_dir() / "config.toml")
    return json_has(scope.claude_servers(), ("mcpServers", SERVER))


# --- planning ------------------------------------------------------------------------------------------------------

def _package_skills() -> list[Path]:
    return sorted(p.parent for p in skills_dir().glob("*/SKILL.md"))


def _plan_configs(plan: Plan, spec: _Spec) -> None:
    for path, part in spec.json:
        before, after, kept = json_after(path, part, plan.remove)
        plan.kept += kept
        if before != after:
            plan.changes.append(Change(path, "file", before, after))
    if spec.toml:
        path, block = spec.toml
        before, after = toml_after(path, None if plan.remove else block, (SERVER, STUDY_SERVER))
        if before != after:
            plan.changes.append(Change(path, "file", before, after))


def _plan_files(plan: Plan, files: dict[Path, str]) -> None:
    for path, content in files.items():
        current = path.read_bytes() if path.is_file() else None  # bytes: a file of theirs need not be UTF-8
        exists = current is not None or path.exists() or path.is_symlink()
        differs = f"{plan.scope.show(path)}: kept, it differs from tunepack's (yours, edited, or another version)"
        same = current == content.encode("utf-8")
        if plan.remove and same:
            plan.changes.append(Change(path, "file", content, None))
        elif plan.remove and exists:
            plan.kept.append(differs)
        elif not plan.remove and not exists:
            plan.changes.append(Change(path, "file", None, content))
        elif not plan.remove and not same:
            plan.kept.append(differs + "; delete it and rerun to get tunepack's")


def _plan_skills(plan: Plan, users: list[str]) -> None:
    show = plan.scope.show
    if plan.remove and users:
        plan.kept.append(f"{show(plan.scope.skills)}/tunepack-*: kept, "
                         f"{' and '.join(NAMES[h] for h in users)} still use{'s' if len(users) == 1 else ''} them")
        return
    for source in _package_skills():
        dest = plan.scope.skills / source.name
        if dest.is_symlink() and plan.remove:
            continue  # setup copies, it never links here: a link is theirs
        if not (dest.exists() or dest.is_symlink()):
            if not plan.remove:
                plan.changes.append(Change(dest, "skill", None, str(source)))
        elif same_tree(source, dest):
            if plan.remove:
                plan.changes.append(Change(dest, "skill", str(source), None))
        else:
            plan.kept.append(f"{show(dest)}: kept, it differs from this tunepack's copy (pitfalls recorded there, "
                             "or another version)" + ("" if plan.remove else "; its pitfalls stay yours"))


def _plan_links(plan: Plan, folder: Path) -> None:
    for source in _package_skills():
        link = folder / source.name
        target = os.path.relpath(plan.scope.skills / source.name, folder)
        mine = link.is_symlink() and os.readlink(link) == target
        if plan.remove and mine:
            plan.changes.append(Change(link, "link", target, None))
        elif not plan.remove and not mine and (link.exists() or link.is_symlink()):
            plan.kept.append(f"{plan.scope.show(link)}: kept yours (tunepack's would link to {target})")
        elif not plan.remove and not mine:
            plan.changes.append(Change(link, "link", None, target))


def plan(harness: str, project: str | Path | None = None, user: bool = False, remove: bool = False,
         env: Mapping[str, str] | None = None) -> Plan:
    """Everything ``tunepack setup`` would change, computed (and every file checked) before anything is written."""
    if harness not in SPECS:
        raise SetupError(f"'{harness}' is not a harness tunepack sets up.", f"use one of {', '.join(HARNESSES)}.")
    env = settings.environment() if env is None else env
    scope = Scope(_home(env) if user else _project(project), user, env)
    spec = SPECS[harness](scope)
    result = Plan(harness, scope, remove)
    # the configs are read, merged and written back: a link out of the root is refused before it is even read
    _confine(scope, [path for path, _ in spec.json] + ([spec.toml[0]] if spec.toml else []))
    _plan_configs(result, spec)
    _plan_files(result, spec.files)
    users = [h for h in HARNESSES if h != harness and configured(h, scope)] if remove else []
    if spec.skill_links:
        _plan_links(result, spec.skill_links)
    _plan_skills(result, users)
    # a link setup makes or removes is replaced or unlinked itself: only the folders above it count
    _confine(scope, [(c.path.parent if c.kind == "link" else c.path) for c in result.changes])
    return result


def where(scope: Scope) -> tuple[str, str]:
    """How messages name the scope's root, and the end of the fix for a link out of it."""
    if scope.user:
        return ("your home folder or the harness folder named for it",
                ", or point CODEX_HOME, CLAUDE_CONFIG_DIR or XDG_CONFIG_HOME at the real folder")
    return "the project", ", or run setup in the project the link points into"


def _confine(scope: Scope, targets: list[Path]) -> None:
    """Refuse the whole run when a write or removal would go through a link out of its root."""
    refuse_escapes(((path, scope.root_of(path)) for path in targets), *where(scope))


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home()).expanduser().resolve()


def _project(project: str | Path | None) -> Path:
    base = Path(project or Path.cwd()).expanduser().resolve()
    if not base.is_dir():
        raise SetupError(f"There is no folder {base}.", "pass --project with an existing project folder.")
    if (base / LAUNCHER).is_file() and (base / "mcp_server" / "harness" / "catalog.py").is_file():
        raise SetupError(f"{base} is tunepack's own clone: its harness files are rendered from the catalog.",
                         "run `tunepack harness sync` here; `tunepack setup` is for your other projects (or --user).")
    return base


__all__ = ["CHECK", "HARNESSES", "NAMES", "Change", "Plan", "Scope", "codex_block", "configured", "launches", "plan",
           "programs", "serve_argv", "where"]
