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


def check_skill(folder: Path) -> list[str]:
    folder = Path(folder)
    skill = folder / "SKILL.md"
    if not skill.is_file():
        return [f"{folder.name}: no SKILL.md"]
    meta, body = frontmatter(skill.read_text(encoding="utf-8"))
    if meta is None:
        return [f"{folder.name}: SKILL.md has no valid YAML frontmatter between --- lines"]
    out = []
    say = out.append
    for key in sorted(set(meta) - ALLOWED):
        say(f"{folder.name}: frontmatter key '{key}' is not allowed (allowed: {', '.join(sorted(ALLOWED))})")
    name = meta.get("name")
    if not isinstance(name, str) or not NAME.match(name) or len(name) > 64:
        say(f"{folder.name}: name '{name}' must be 1-64 chars of a-z, 0-9 and single '-'")
    elif name != folder.name:
        say(f"{folder.name}: name '{name}' differs from the folder name")
    desc = meta.get("description")
    if not isinstance(desc, str) or not 1 <= len(desc) <= 1024:
        say(f"{folder.name}: description must be 1-1024 characters")
    elif not re.search(r"\buse (it )?(when|after|before|for|to)\b", desc, re.I):
        say(f"{folder.name}: description should say when to use the skill ('Use when …')")
    if not meta.get("license"):
        say(f"{folder.name}: no license")
    extra = meta.get("metadata")
    if not isinstance(extra, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
        say(f"{folder.name}: metadata must be a map of strings (quote versions and dates)")
        extra = {}
    version = extra.get("version", "")
    if not SEMVER.match(version):
        say(f"{folder.name}: metadata.version '{version}' is not semver x.y.z")
    if not DAY.match(extra.get("updated", "")):
        say(f"{folder.name}: metadata.updated must be YYYY-MM-DD")
    if body.count("\n") + 1 > MAX_BODY_LINES:
        say(f"{folder.name}: body has {body.count(chr(10)) + 1} lines (at most {MAX_BODY_LINES}; move details to references/)")
    changelog = folder / "CHANGELOG.md"
    if not changelog.is_file():
        say(f"{folder.name}: no CHANGELOG.md")
    else:
        first = re.search(r"^## (\S+)", changelog.read_text(encoding="utf-8"), re.M)
        if not first or first.group(1) != version:
            say(f"{folder.name}: CHANGELOG.md's newest entry is {first.group(1) if first else 'missing'}, "
                f"not the current version {version}")
    pitfalls = folder / "references" / "pitfalls.md"
    if not pitfalls.is_file():
        say(f"{folder.name}: no references/pitfalls.md")
        return out
    entries = parse(pitfalls.read_text(encoding="utf-8"))
    for e in entries:
        missing = [f for f in FIELDS if f != "evidence" and not getattr(e, f)]
        if missing:
            say(f"{folder.name}: pitfall {e.id} lacks {', '.join(missing)}")
    ids = [e.id for e in entries]
    if len(ids) != len(set(ids)):
        say(f"{folder.name}: duplicate pitfall ids in references/pitfalls.md")
    if START not in body or END not in body:
        say(f"{folder.name}: SKILL.md lacks the pitfalls markers {START} … {END}")
    elif body[body.index(START) + len(START): body.index(END)].strip() != listing(entries).strip():
        say(f"{folder.name}: the Pitfalls list in SKILL.md is out of date with references/pitfalls.md")
    stray = [p.name for p in folder.rglob(".*.tmp")]
    if stray:
        say(f"{folder.name}: leftover temporary files {stray}")
    return out


def check_all(root: Path) -> dict[str, list[str]]:
    return {p.parent.name: check_skill(p.parent) for p in sorted(Path(root).glob("*/SKILL.md"))}
