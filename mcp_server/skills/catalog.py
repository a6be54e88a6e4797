"""Skills: list them with their versions, read one (or a file beside it), record a pitfall.

Skills are Agent Skills folders (``SKILL.md`` with YAML frontmatter). They are read from
``TUNEPACK_SKILLS_DIR`` when set (an installed plugin writes its pitfalls there), else from the
``skills/`` folder of this clone (or of the installed package). Pitfalls: see ``pitfalls.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel

from .. import settings
from ..errors import SkillError
from ..resources import skills_dir
from .journal import ensure_consistent

MAX_READ = 16000  # every shipped SKILL.md reads in one call (tests/test_skills_catalog.py)


class SkillInfo(BaseModel):
    name: str
    version: str | None
    updated: str | None
    description: str
    path: str
    files: list[str]
    toolsets: list[str] = []  # toolsets beyond core whose tools the skill names (metadata.toolsets)


def skills_root() -> Path:
    return (settings.skills_dir_override() or skills_dir()).resolve()


def _frontmatter(text: str) -> tuple[dict, str]:
    match = re.match(r"^---\n(.*?)\n---\n?(.*)$", text, re.S)
    if not match:
        return {}, text
    return yaml.safe_load(match.group(1)) or {}, match.group(2)


def skill_dir(name: str) -> Path:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name or ""):
        raise SkillError(f"'{name}' is not a skill name.", "use a name from skills_list (lowercase, digits, '-').")
    folder = skills_root() / name
    if not (folder / "SKILL.md").is_file():
        known = ", ".join(s.name for s in list_skills()) or "none"
        raise SkillError(f"There is no skill '{name}' in {skills_root()} (skills: {known}).", "pick one from skills_list.")
    ensure_consistent(folder)  # a pitfall writer killed mid-write: finish its change before anyone reads
    return folder


def list_skills() -> list[SkillInfo]:
    root = skills_root()
    out = []
    for skill in sorted(p for p in root.glob("*/SKILL.md")) if root.is_dir() else []:
        ensure_consistent(skill.parent)
        meta, _ = _frontmatter(skill.read_text(encoding="utf-8"))
        extra = meta.get("metadata") or {}
        out.append(SkillInfo(
            name=meta.get("name", skill.parent.name), version=str(extra.get("version")) if extra.get("version") else None,
            updated=str(extra.get("updated")) if extra.get("updated") else None,
            description=str(meta.get("description", "")), path=str(skill.parent),
            files=sorted(str(p.relative_to(skill.parent)) for p in skill.parent.rglob("*") if p.is_file()),
            toolsets=str(extra.get("toolsets") or "").split()))
    return out


def read_skill(name: str, file: str | None = None, offset: int = 0, section: str | None = None,
               served: tuple[str, ...] | None = None) -> str:
    """A skill's SKILL.md (or one of its files), at most MAX_READ characters from ``offset`` (cut at a line end);
    a page that does not reach the end says the offset to read on from. ``section``: only the part under the
    heading that contains those words (the headings are listed when none does). ``served``: the toolsets of the
    server reading it; the first page then says which toolsets the skill's tools need that it does not serve."""
    page = _page(name, file, offset, section)
    if served is None or offset or file not in (None, "SKILL.md") or section:  # said once a skill: its first page
        return page
    return _missing_toolsets(name, served) + page


def _missing_toolsets(name: str, served: tuple[str, ...]) -> str:
    meta, _ = _frontmatter((skill_dir(name) / "SKILL.md").read_text(encoding="utf-8"))
    wanted = str((meta.get("metadata") or {}).get("toolsets") or "").split()
    missing = [t for t in wanted if t not in served]
    if not missing:
        return ""
    from ..harness.toolsets import TOOLSETS

    text = (skill_dir(name) / "SKILL.md").read_text(encoding="utf-8")
    named = [tool for t in missing for tool in TOOLSETS.get(t, ()) if re.search(rf"\b{tool}\b", text)]
    if not named:  # the skill's text names no tool of those toolsets: nothing it says is out of reach
        return ""
    missing = [t for t in missing if set(TOOLSETS.get(t, ())) & set(named)]
    extra = ",".join(missing)
    return (f"[This skill also names {', '.join(named)} (toolset(s) {', '.join(missing)}), which this "
            f"server does not serve (it serves {', '.join(served)}; every other tool the skill names is served). "
            "Each step with such a tool gives its `tunepack` CLI line; for the "
            f"tools themselves, restart the server with `tunepack serve --toolsets {','.join(served)},{extra}` "
            f"(or TUNEPACK_TOOLSETS={','.join(served)},{extra}).]\n\n")


def _page(name: str, file: str | None, offset: int, section: str | None) -> str:
    folder = skill_dir(name)
    target = (folder / (file or "SKILL.md")).resolve()
    if folder.resolve() not in target.parents or not target.is_file():
        raise SkillError(f"'{file}' is not a file of skill '{name}'.", "use one of the files skills_list shows for it.")
    text = target.read_text(encoding="utf-8")
    where = file or "SKILL.md"
    if section:
        text, where = _section(text, section, name, where), f"{where}, section '{section}'"
    if offset < 0 or (offset and offset >= len(text)):
        raise SkillError(f"offset {offset} is past the end of {where} of skill '{name}' ({len(text)} characters).",
                         "read from offset 0, or the offset the last page named.")
    if len(text) - offset <= MAX_READ:
        return text[offset:]
    end = text.rfind("\n", offset, offset + MAX_READ) + 1 or offset + MAX_READ
    args = f"name='{name}'" + (f", file='{file}'" if file else "") + (f", section='{section}'" if section else "")
    return (text[offset:end] + f"\n… [characters {offset}–{end} of {len(text)} of {where}; the rest: "
            f"skills_read({args}, offset={end}), or `tunepack skills read {name}"
            + (f" {file}" if file else "") + (f" --section '{section}'" if section else "") + f" --offset {end}`]")


def _section(text: str, words: str, name: str, where: str) -> str:
    """The part of a markdown text under the first heading containing ``words`` (case-insensitive), through the
    next heading of the same or a higher level."""
    headings = [(m.start(), len(m.group(1)), m.group(2).strip()) for m in re.finditer(r"^(#{1,6})\s+(.+)$", text, re.M)]
    for i, (start, level, title) in enumerate(headings):
        if words.lower() in title.lower():
            end = next((s for s, lv, _ in headings[i + 1:] if lv <= level), len(text))
            return text[start:end]
    titles = "; ".join(t for _, _, t in headings)
    raise SkillError(f"{where} of skill '{name}' has no heading containing '{words}'.", f"use one of: {titles}.")
