"""The chat commands (mcp_server/harness/catalog.py) as MCP prompts, so any MCP client lists them: the same
text as the OpenCode and Claude Code commands, with the arguments filled in."""

from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument

from ..harness import COMMANDS, Command, mcp_prompt_body


def _prompt(cmd: Command) -> Prompt:
    def render(**values: str) -> str:
        return mcp_prompt_body(cmd, values)

    return Prompt(name=cmd.name, title=cmd.name.replace("-", " "), description=cmd.description, fn=render,
                  arguments=[PromptArgument(name=a.name, description=a.description, required=a.required)
                             for a in cmd.args])


def register(server) -> None:
    for cmd in COMMANDS:
        server.add_prompt(_prompt(cmd))
