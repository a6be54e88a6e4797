"""Skills are listed with their versions and read (SKILL.md or a file beside it), from the clone or
from TUNEPACK_SKILLS_DIR."""

import pytest

from mcp_server.skills import SkillError, list_skills, read_skill, skills_root


@pytest.fixture
def skills(tmp_path, monkeypatch):
    folder = tmp_path / "skills" / "sft"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text('---\nname: sft\ndescription: SFT things. Use when training.\nmetadata:\n'
                                     '  version: "0.2.0"\n  updated: "2026-01-01"\n---\n\n# SFT\n')
    (folder / "references" / "lr.md").write_text("learning rates")
    monkeypatch.setenv("TUNEPACK_SKILLS_DIR", str(tmp_path / "skills"))
    return folder


def test_list_and_read(skills):
    (info,) = list_skills()
    assert (info.name, info.version, info.updated) == ("sft", "0.2.0", "2026-01-01")
    assert info.files == ["SKILL.md", "references/lr.md"]
    assert read_skill("sft", "references/lr.md") == "learning rates"
    assert skills_root() == skills.parent.resolve()


@pytest.mark.parametrize("call, needle", [
    (lambda: read_skill("nope"), "no skill 'nope'"),
    (lambda: read_skill("sft", "../../etc/passwd"), "is not a file of skill"),
    (lambda: read_skill("Bad Name"), "is not a skill name"),
])
def test_errors(skills, call, needle):
    with pytest.raises(SkillError, match=needle):
        call()


def test_shipped_skills_are_found_without_the_env(monkeypatch):
    monkeypatch.delenv("TUNEPACK_SKILLS_DIR", raising=False)
    names = {s.name for s in list_skills()}
    assert {"tunepack-pipeline", "tunepack-sft", "tunepack-hf-jobs", "tunepack-trackio", "tunepack-viewer",
            "tunepack-evaluation", "tunepack-traces"} <= names


def test_every_shipped_skill_reads_to_its_end_through_its_pages(monkeypatch):
    """A client with no shell reads the whole of a long skill by following the offset each cut page names."""
    import re

    from mcp_server.skills import catalog
    from mcp_server.skills.catalog import MAX_READ

    monkeypatch.delenv("TUNEPACK_SKILLS_DIR", raising=False)
    for skill in list_skills():  # one call reads each shipped SKILL.md whole
        whole = (skills_root() / skill.name / "SKILL.md").read_text(encoding="utf-8")
        assert read_skill(skill.name) == whole, f"{skill.name}: {len(whole)} characters, more than a page"
    MAX_READ = 4000
    monkeypatch.setattr(catalog, "MAX_READ", MAX_READ)  # pages, as a longer file would have
    for skill in list_skills():
        whole = (skills_root() / skill.name / "SKILL.md").read_text(encoding="utf-8")
        pages, offset = [], 0
        while True:
            page = read_skill(skill.name, offset=offset)
            found = re.search(r"\n… \[characters \d+–(\d+) of \d+ of SKILL\.md; the rest: skills_read\(name='"
                              + re.escape(skill.name) + r"', offset=(\d+)\)", page)
            if not found:
                pages.append(page)
                break
            assert len(page) <= MAX_READ + 400 and found.group(1) == found.group(2)
            pages.append(page[:found.start()])
            offset = int(found.group(2))
        assert "".join(pages) == whole, skill.name
    section = read_skill("tunepack-sft", section="pitfalls")
    assert section.startswith("## Pitfalls") and "P-012" in section
    with pytest.raises(SkillError, match="no heading containing 'nothing like it'"):
        read_skill("tunepack-sft", section="nothing like it")
    with pytest.raises(SkillError, match="past the end"):
        read_skill("tunepack-sft", offset=10**6)
