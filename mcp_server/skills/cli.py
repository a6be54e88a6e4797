"""``tunepack skills`` and ``tunepack pitfall``: list and check skills, record a pitfall.

Usage:
    tunepack skills list                      # names, versions, where they are read from
    tunepack skills read NAME [FILE]          # a skill's SKILL.md, or one of its files (references/…)
    tunepack skills check                     # the standard + tunepack's rules, every skill (exit 1 on problems)
    tunepack skills sync                      # rebuild each SKILL.md's Pitfalls list from references/pitfalls.md
    tunepack pitfall add SKILL --symptom "…" --cause "…" --fix "…" [--evidence "job …"] [--source NAME]
    tunepack pitfall list SKILL
Skills are read from and written to TUNEPACK_SKILLS_DIR when set (--skills-dir overrides), else the
clone's skills/ folder.
"""

from __future__ import annotations

import json

from .. import settings


def add_parsers(sub) -> None:
    p = sub.add_parser("skills", help="list the skills or check them against the Agent Skills standard")
    p.add_argument("action", choices=["list", "read", "check", "sync"])
    p.add_argument("name", nargs="?", help="(read) the skill")
    p.add_argument("file", nargs="?", help="(read) a file of the skill (default SKILL.md)")
    p.add_argument("--offset", type=int, default=0, help="(read) from this character on (a cut page names it)")
    p.add_argument("--section", help="(read) only the part under the heading containing these words")
    p.add_argument("--skills-dir", help="read skills from here (default: TUNEPACK_SKILLS_DIR, else skills/)")
    p.set_defaults(func=run_skills)
    p = sub.add_parser("pitfall", help="record a pitfall into a skill, or list a skill's pitfalls")
    p.add_argument("action", choices=["add", "list"])
    p.add_argument("skill")
    p.add_argument("--symptom")
    p.add_argument("--cause")
    p.add_argument("--fix")
    p.add_argument("--evidence", default="")
    p.add_argument("--source", default="cli")
    p.add_argument("--skills-dir", help="write into this skills folder (default: TUNEPACK_SKILLS_DIR, else skills/)")
    p.set_defaults(func=run_pitfall)


def _use_dir(args) -> None:
    if args.skills_dir:
        settings.set_skills_dir(args.skills_dir)


def run_skills(args) -> None:
    from . import SkillError, list_skills, skills_root
    from .validate import check_all

    _use_dir(args)
    if args.action == "sync":
        from .pitfalls import sync_listing

        for s in list_skills():
            print(f"{s.name}: {'updated' if sync_listing(s.name) else 'in sync'}")
        return
    if args.action == "read":
        from . import read_skill

        if not args.name:
            raise SkillError("`tunepack skills read` needs a skill name.", "run `tunepack skills list`.")
        print(read_skill(args.name, args.file, args.offset, args.section), end="")
        return
    if args.action == "list":
        for s in list_skills():
            print(f"{s.name:<24} v{s.version or '?':<8} {s.path}")
        return
    problems = {name: found for name, found in check_all(skills_root()).items() if found}
    if problems:
        lines = [p for found in problems.values() for p in found]
        raise SkillError(f"{len(lines)} skill problem(s): " + "; ".join(lines), "fix each named file and run again.")
    print(f"ok: every skill in {skills_root()} passes")


def run_pitfall(args) -> None:
    from . import SkillError, add_pitfall, list_pitfalls

    _use_dir(args)
    if args.action == "list":
        for p in list_pitfalls(args.skill):
            print(f"{p.id}  {p.date}  {p.symptom}")
        return
    if not (args.symptom and args.cause and args.fix):
        raise SkillError("`tunepack pitfall add` needs --symptom, --cause and --fix.",
                         "describe what you saw, why it happened and what to do instead.")
    result = add_pitfall(args.skill, symptom=args.symptom, cause=args.cause, fix=args.fix, evidence=args.evidence,
                         source=args.source)
    print(json.dumps(result.model_dump(), indent=2))
