"""The chat commands (mcp_server/harness/catalog.py) as MCP prompts, so any MCP client lists them: the same
text as the OpenCode and Claude Code commands, with the arguments filled in."""

from typing import Any

from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from ..harness import COMMANDS, Command, mcp_prompt_body
from .protocol import quoted


def _prompt(cmd: Command) -> Prompt:
    def render(**values: str) -> str:
        return mcp_prompt_body(cmd, values)

    return Prompt(name=cmd.name, title=cmd.name.replace("-", " "), description=cmd.description, fn=render,
                  arguments=[PromptArgument(name=a.name, description=a.description, required=a.required)
                             for a in cmd.args])


def register(server) -> None:
    for cmd in COMMANDS:
        server.add_prompt(_prompt(cmd))


def refusal(prompt: Prompt | None, name: str, arguments: dict[str, Any] | None) -> MCPError | None:
    """The -32602 Invalid params owed for prompts/get of an unknown prompt or without a required argument
    (``None``: the request is fine)."""
    if prompt is None:
        return MCPError(code=INVALID_PARAMS, data={"name": name[:80]}, message=f"Unknown prompt: {quoted(name)}. "
                        "Fix: call prompts/list for the prompts this server offers.")
    given = arguments or {}
    missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in given]
    if not missing:
        return None
    return MCPError(code=INVALID_PARAMS, data={"missing": missing},
                    message=f"Prompt '{name}' needs the argument(s) {', '.join(missing)}. Fix: pass them in "
                            "arguments (prompts/list gives each prompt's arguments and which are required).")
