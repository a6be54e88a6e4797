"""Skills room: Agent Skills with versions, and the pitfalls agents record into them."""

from .catalog import SkillError, SkillInfo, add_pitfall, list_skills, read_skill, skills_root

__all__ = ["SkillError", "SkillInfo", "add_pitfall", "list_skills", "read_skill", "skills_root"]
