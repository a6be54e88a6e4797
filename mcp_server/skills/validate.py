"""Check a skill folder against the Agent Skills standard and tunepack's own rules.

    problems = check_skill(Path("skills/tunepack-sft"))     # [] when the skill is fine

Standard (agentskills.io): ``name`` 1-64 chars of ``[a-z0-9-]`` without leading/trailing/double
``-`` and equal to the folder; ``description`` 1-1024 chars; only the keys name, description,
license, compatibility, metadata, allowed-tools; ``metadata`` a string→string map.
tunepack adds: a license, ``metadata.version`` (semver) and ``metadata.updated`` (YYYY-MM-DD), a
description that says when to use the skill, a body of at most 500 lines, a CHANGELOG.md whose
newest entry is the current version, a parseable ``references/pitfalls.md`` with every field
filled, and a Pitfalls list in SKILL.md that matches that file (no drift).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from .journal import JOURNAL
from .pitfalls import END, FIELDS, START, listing, parse

ALLOWED = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_BODY_LINES = 500


def frontmatter(text: str) -> tuple[dict | None, str]:
    m = re.match(r"^---\n(.*?)\n---\n?(.*)$", text, re.S)
    if not m:
        return None, text
    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return None, m.group(2)
    return (data if isinstance(data, dict) else None), m.group(2)


def _check_identity(name: str, meta: dict) -> list[str]:
    """Allowed keys, name, description and license."""
    out = [f"{name}: frontmatter key '{key}' is not allowed (allowed: {', '.join(sorted(ALLOWED))})"
           for key in sorted(set(meta) - ALLOWED)]
    skill_name = meta.get("name")
    if not isinstance(skill_name, str) or not NAME.match(skill_name) or len(skill_name) > 64:
        out.append(f"{name}: name '{skill_name}' must be 1-64 chars of a-z, 0-9 and single '-'")
    elif skill_name != name:
        out.append(f"{name}: name '{skill_name}' differs from the folder name")
    desc = meta.get("description")
    if not isinstance(desc, str) or not 1 <= len(desc) <= 1024:
        out.append(f"{name}: description must be 1-1024 characters")
    elif not re.search(r"\buse (it )?(when|after|before|for|to)\b", desc, re.I):
        out.append(f"{name}: description should say when to use the skill ('Use when …')")
    if not meta.get("license"):
        out.append(f"{name}: no license")
    return out


def _check_metadata(name: str, meta: dict) -> tuple[list[str], str]:
    """Problems with the metadata map, and the skill's version ('' when absent)."""
    out = []
    extra = meta.get("metadata")
    if not isinstance(extra, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
        out.append(f"{name}: metadata must be a map of strings (quote versions and dates)")
        extra = {}
    version = extra.get("version", "")
    if not SEMVER.match(version):
        out.append(f"{name}: metadata.version '{version}' is not semver x.y.z")
    if not DAY.match(extra.get("updated", "")):
        out.append(f"{name}: metadata.updated must be YYYY-MM-DD")
    return out, version


def _check_changelog(folder: Path, version: str) -> list[str]:
    changelog = folder / "CHANGELOG.md"
    if not changelog.is_file():
        return [f"{folder.name}: no CHANGELOG.md"]
    first = re.search(r"^## (\S+)", changelog.read_text(encoding="utf-8"), re.M)
    if not first or first.group(1) != version:
        return [f"{folder.name}: CHANGELOG.md's newest entry is {first.group(1) if first else 'missing'}, "
                f"not the current version {version}"]
    return []


def _check_pitfalls(name: str, pitfalls: Path, body: str) -> list[str]:
    """references/pitfalls.md has every field filled and unique ids, and SKILL.md's list matches it."""
    out = []
    entries = parse(pitfalls.read_text(encoding="utf-8"))
    for e in entries:
        missing = [f for f in FIELDS if f != "evidence" and not getattr(e, f)]
        if missing:
            out.append(f"{name}: pitfall {e.id} lacks {', '.join(missing)}")
    ids = [e.id for e in entries]
    if len(ids) != len(set(ids)):
        out.append(f"{name}: duplicate pitfall ids in references/pitfalls.md")
    if START not in body or END not in body:
        out.append(f"{name}: SKILL.md lacks the pitfalls markers {START} … {END}")
    elif body[body.index(START) + len(START): body.index(END)].strip() != listing(entries).strip():
        out.append(f"{name}: the Pitfalls list in SKILL.md is out of date with references/pitfalls.md")
    return out


def check_skill(folder: Path) -> list[str]:
    folder = Path(folder)
    skill = folder / "SKILL.md"
    if not skill.is_file():
        return [f"{folder.name}: no SKILL.md"]
    meta, body = frontmatter(skill.read_text(encoding="utf-8"))
    if meta is None:
        return [f"{folder.name}: SKILL.md has no valid YAML frontmatter between --- lines"]
    out = _check_identity(folder.name, meta)
    problems, version = _check_metadata(folder.name, meta)
    out += problems
    if body.count("\n") + 1 > MAX_BODY_LINES:
        out.append(f"{folder.name}: body has {body.count(chr(10)) + 1} lines (at most {MAX_BODY_LINES}; "
                   "move details to references/)")
    out += _check_changelog(folder, version)
    pitfalls = folder / "references" / "pitfalls.md"
    if not pitfalls.is_file():
        out.append(f"{folder.name}: no references/pitfalls.md")
        return out
    out += _check_pitfalls(folder.name, pitfalls, body)
    stray = [p.name for p in folder.rglob(".*.tmp")]
    if stray:
        out.append(f"{folder.name}: leftover temporary files {stray}")
    if (folder / JOURNAL).exists():
        out.append(f"{folder.name}: a pitfall write was interrupted ({JOURNAL}); any skills call finishes it "
                   "(e.g. `tunepack skills list`)")
    return out


def check_all(root: Path) -> dict[str, list[str]]:
    return {p.parent.name: check_skill(p.parent) for p in sorted(Path(root).glob("*/SKILL.md"))}
