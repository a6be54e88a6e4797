import pytest

from mcp_server.skills import SkillError, add_pitfall, list_skills, read_skill


@pytest.fixture
def skills(tmp_path, monkeypatch):
    folder = tmp_path / "skills" / "sft"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: sft\ndescription: SFT things.\nmetadata:\n  version: 0.2.0\n"
                                     "  updated: 2026-01-01\n---\n\n# SFT\n\n## Pitfalls\n\n- old one\n\n## More\n\nx\n")
    (folder / "references" / "lr.md").write_text("learning rates")
    monkeypatch.setenv("TUNEPACK_SKILLS_DIR", str(tmp_path / "skills"))
    return folder


def test_list_and_read(skills):
    (info,) = list_skills()
    assert (info.name, info.version, info.updated) == ("sft", "0.2.0", "2026-01-01")
    assert info.files == ["SKILL.md", "references/lr.md"]
    assert read_skill("sft", "references/lr.md") == "learning rates"


def test_pitfall_goes_into_the_section_once_and_dates_the_skill(skills):
    line = add_pitfall("sft", "eval hangs", "eval_strategy without eval data hangs. Fix: set eval data.", today="2026-11-30")
    assert add_pitfall("sft", "eval hangs", "eval_strategy without eval data hangs. Fix: set eval data.",
                       today="2026-11-30") == line
    text = (skills / "SKILL.md").read_text()
    assert text.count(line) == 1
    assert text.index("- old one") < text.index(line) < text.index("## More")
    assert "updated: 2026-11-30" in text


def test_pitfall_section_is_created_when_missing(skills):
    (skills / "SKILL.md").write_text("---\nname: sft\ndescription: d\n---\n\n# SFT\n")
    add_pitfall("sft", "t", "x")
    assert "\n## Pitfalls\n- **t**" in (skills / "SKILL.md").read_text()


@pytest.mark.parametrize("call, needle", [
    (lambda: read_skill("nope"), "no skill 'nope'"),
    (lambda: read_skill("../etc"), "is not a skill name"),
    (lambda: read_skill("sft", "../../x"), "is not a file of skill"),
    (lambda: add_pitfall("sft", "", "x"), "needs a short title"),
])
def test_errors(skills, call, needle):
    with pytest.raises(SkillError, match=needle):
        call()


def test_shipped_skills_are_found_without_the_env(monkeypatch):
    monkeypatch.delenv("TUNEPACK_SKILLS_DIR", raising=False)
    assert "tunepack-pipeline" in {s.name for s in list_skills()}
