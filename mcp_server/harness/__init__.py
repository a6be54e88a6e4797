"""Harness room: the repository as a reproducible agent setup for OpenCode, Codex and Claude Code.

One definition (``catalog.py``: server launch, spending tools, roles, commands) is rendered into
every harness's files (``render.py``); ``tunepack harness check`` fails when they drift.
``setup.py`` (``tunepack setup``) writes the same pieces into any project, or a user's config.
"""

from .catalog import COMMANDS, ROLES, SPENDING, Arg, Command, Role
from .render import LINKS, check, managed_files, mcp_prompt_body, sync

__all__ = ["COMMANDS", "LINKS", "ROLES", "SPENDING", "Arg", "Command", "Role", "check", "managed_files",
           "mcp_prompt_body", "sync"]
