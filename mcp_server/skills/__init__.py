"""Skills room: Agent Skills with versions, the pitfalls agents record into them, and their checks."""

from .catalog import SkillError, SkillInfo, list_skills, read_skill, skill_dir, skills_root
from .pitfalls import Pitfall, PitfallResult, add_pitfall, list_pitfalls

__all__ = ["Pitfall", "PitfallResult", "SkillError", "SkillInfo", "add_pitfall", "list_pitfalls", "list_skills",
           "read_skill", "skill_dir", "skills_root"]
