"""Pitfalls: structured entries agents append to a skill so the next run does not repeat a mistake.

    result = add_pitfall("tunepack-sft", symptom="…", cause="…", fix="…", evidence="job local-…: …")
    entries = list_pitfalls("tunepack-sft")

Each skill keeps its entries in ``references/pitfalls.md`` (``## P-007: <symptom>`` then one
``- **Field:** value`` line per field: symptom, cause, fix, evidence, date, source). The skill's
``SKILL.md`` lists the newest ten between ``<!-- tunepack:pitfalls:start/end -->`` markers, so its
body stays short however many accumulate; ``CHANGELOG.md`` gets a line per version bump.

An append validates sizes, redacts secrets, returns the existing id for a near-duplicate instead
of adding a second entry, bumps the skill's patch version, and runs under a file lock; the three files
change as one (``journal.commit``): a writer killed mid-way leaves either the old files or a journal that
the next skills call finishes (``journal.recover``), and the SKILL.md list is rebuilt from pitfalls.md on
every write. Entry text is flattened to one line per field and markup that
could end a field or start a block (headings, fences, ``---``, HTML comments) is neutralised.
"""

from __future__ import annotations

import difflib
import re
import time
from collections import Counter

from pydantic import BaseModel

from ..redact import redact_text
from .catalog import SkillError, skill_dir
from .journal import commit, folder_lock, recover

FIELDS = ("symptom", "cause", "fix", "evidence", "date", "source")
LIMITS = {"symptom": (8, 200), "cause": (8, 1000), "fix": (8, 1000), "evidence": (0, 600), "source": (1, 80)}
LISTED = 10
START, END = "<!-- tunepack:pitfalls:start -->", "<!-- tunepack:pitfalls:end -->"
ENTRY = re.compile(r"^## (P-\d{3,}): ?(.*)$", re.M)
FIELD = re.compile(r"^- \*\*(\w+):\*\* ?(.*)$")
HEADER = ("# Pitfalls of {name}\n\nEntries are appended by `tunepack pitfall add` / the `skills_add_pitfall` "
          "tool; newest last. Ids never change.\n")
SIMILAR = 0.82


class Pitfall(BaseModel):
    id: str
    symptom: str
    cause: str
    fix: str
    evidence: str = ""
    date: str
    source: str


class PitfallResult(BaseModel):
    skill: str
    id: str
    added: bool
    duplicate_of: str | None = None
    version: str
    pitfalls_path: str
    skill_path: str
    redacted: int = 0


def clean(value: str) -> str:
    """One line; nothing that could start a heading, fence, rule, list field or the section markers."""
    text = " ".join(str(value).split())
    text = text.replace("<!--", "&lt;!--").replace("-->", "--&gt;").replace("```", "ʼʼʼ").replace("~~~", "∼∼∼")
    return text


def _slug_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def _similar(a: Pitfall, symptom: str, cause: str) -> bool:
    """Near-duplicate: the same words in nearly the same order (symptom + cause), or nearly the same
    symptom words. Word-level, with difflib's cheap upper bounds first (fast on long files)."""
    left, right = _slug_words(a.symptom + " " + a.cause), _slug_words(symptom + " " + cause)
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    if matcher.real_quick_ratio() >= SIMILAR and matcher.quick_ratio() >= SIMILAR and matcher.ratio() >= SIMILAR:
        return True
    wa, wb = set(_slug_words(a.symptom)), set(_slug_words(symptom))
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= 0.8


def parse(text: str) -> list[Pitfall]:
    heads = list(ENTRY.finditer(text))
    out = []
    for i, head in enumerate(heads):
        body = text[head.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        fields = {"id": head.group(1)}
        for line in body.splitlines():
            m = FIELD.match(line)
            if m and m.group(1).lower() in FIELDS:
                fields[m.group(1).lower()] = m.group(2)
        fields.setdefault("symptom", head.group(2))
        out.append(Pitfall(**{"cause": "", "fix": "", "date": "", "source": "", **fields}))
    return out


def render_entry(p: Pitfall) -> str:
    lines = [f"## {p.id}: {p.symptom}", ""]
    lines += [f"- **{name.capitalize()}:** {getattr(p, name)}" for name in FIELDS]
    return "\n".join(lines) + "\n"


def listing(entries: list[Pitfall]) -> str:
    if not entries:
        return "No pitfalls recorded yet. See [references/pitfalls.md](references/pitfalls.md)."
    newest = sorted(entries, key=lambda p: int(p.id[2:]), reverse=True)[:LISTED]
    lines = [f"- [{p.id}](references/pitfalls.md) {p.symptom}" for p in newest]
    more = len(entries) - len(newest)
    tail = f"{more} older entr{'y' if more == 1 else 'ies'} and " if more > 0 else ""
    return "\n".join(lines) + f"\n\n{tail}causes, fixes and evidence: [references/pitfalls.md](references/pitfalls.md)."


def _bump(version: str) -> str:
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version.strip())
    if not m:
        raise SkillError(f"The skill's metadata.version '{version}' is not semver (x.y.z).",
                         "set metadata.version to e.g. \"0.1.0\" in the SKILL.md frontmatter.")
    return f"{m.group(1)}.{m.group(2)}.{int(m.group(3)) + 1}"


def _update_skill(text: str, entries: list[Pitfall], version: str | None, day: str) -> str:
    head = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if not head:
        raise SkillError("SKILL.md has no YAML frontmatter.", "start it with --- name/description/metadata ---.")
    front = head.group(1)
    if version:
        front = re.sub(r'(\n  version: )"?[^"\n]*"?', rf'\g<1>"{version}"', front, count=1)
        front = re.sub(r'(\n  updated: )"?[^"\n]*"?', rf'\g<1>"{day}"', front, count=1)
    body = text[head.end():]
    block = f"{START}\n{listing(entries)}\n{END}"
    if START in body and END in body:
        body = body[: body.index(START)] + block + body[body.index(END) + len(END):]
    else:
        body = body.rstrip("\n") + ("\n\n## Pitfalls\n\n" if "\n## Pitfalls" not in body else "\n\n") + block + "\n"
    return f"---\n{front}\n---\n{body}"


def _changelog(text: str, version: str, line: str, day: str) -> str:
    """Newest version first, under the '# Changelog' title."""
    body = text[len("# Changelog"):] if text.startswith("# Changelog") else "\n" + text
    older = body.strip("\n")
    return f"# Changelog\n\n## {version} — {day}\n- {line}\n" + (f"\n{older}\n" if older else "")


def _version(skill_text: str) -> str:
    m = re.search(r'\n  version: "?([^"\n]+)"?', skill_text.split("\n---\n", 1)[0])
    if not m:
        raise SkillError("The skill's frontmatter has no metadata.version.", "add metadata: {version: \"0.1.0\"}.")
    return m.group(1)


def list_pitfalls(skill: str) -> list[Pitfall]:
    path = skill_dir(skill) / "references" / "pitfalls.md"
    return parse(path.read_text(encoding="utf-8")) if path.is_file() else []


def add_pitfall(skill: str, *, symptom: str, cause: str, fix: str, evidence: str = "", source: str = "agent",
                today: str | None = None) -> PitfallResult:
    folder = skill_dir(skill)
    counts: Counter = Counter()
    values = {k: clean(redact_text(str(v), counts)) for k, v in
              {"symptom": symptom, "cause": cause, "fix": fix, "evidence": evidence, "source": source}.items()}
    for name, (low, high) in LIMITS.items():
        if not low <= len(values[name]) <= high:
            raise SkillError(
                f"The pitfall's {name} is {len(values[name])} characters; it must be {low}-{high}.",
                "symptom = what you saw (one line), cause = why, fix = what to do instead, evidence = a job id "
                "or log line, source = who/what found it.",
            )
    day = today or time.strftime("%Y-%m-%d")
    refs = folder / "references"
    refs.mkdir(exist_ok=True)
    path, skill_md, changelog = refs / "pitfalls.md", folder / "SKILL.md", folder / "CHANGELOG.md"
    with folder_lock(folder):
        recover(folder)  # finish what a writer killed mid-write left
        current = path.read_text(encoding="utf-8") if path.is_file() else HEADER.format(name=skill)
        entries = parse(current)
        skill_text = skill_md.read_text(encoding="utf-8")
        for existing in entries:
            if _similar(existing, values["symptom"], values["cause"]):
                commit(folder, {skill_md: _update_skill(skill_text, entries, None, day)})  # repair a stale list
                return PitfallResult(skill=skill, id=existing.id, added=False, duplicate_of=existing.id,
                                     version=_version(skill_text), pitfalls_path=str(path), skill_path=str(skill_md),
                                     redacted=sum(counts.values()))
        number = max((int(p.id[2:]) for p in entries), default=0) + 1
        entry = Pitfall(id=f"P-{number:03d}", date=day, **values)
        entries.append(entry)
        version = _bump(_version(skill_text))
        log = changelog.read_text(encoding="utf-8") if changelog.is_file() else "# Changelog\n"
        commit(folder, {  # the three files change together: a writer killed mid-way is finished by the next call
            path: current.rstrip("\n") + "\n\n" + render_entry(entry),
            skill_md: _update_skill(skill_text, entries, version, day),
            changelog: _changelog(log, version, f"pitfall {entry.id}: {entry.symptom}", day)})
    return PitfallResult(skill=skill, id=entry.id, added=True, version=version, pitfalls_path=str(path),
                         skill_path=str(skill_md), redacted=sum(counts.values()))


def sync_listing(skill: str) -> bool:
    """Rebuild SKILL.md's Pitfalls list from references/pitfalls.md (no version bump); True if it changed."""
    folder = skill_dir(skill)
    with folder_lock(folder):
        recover(folder)
        skill_md = folder / "SKILL.md"
        text = skill_md.read_text(encoding="utf-8")
        new = _update_skill(text, list_pitfalls(skill), None, "")
        if new != text:
            commit(folder, {skill_md: new})
        return new != text
