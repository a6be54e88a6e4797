"""The "MCP tool → CLI twin" table (docs/commands.md, linked from the README) is the contract between the two faces: it names every MCP tool
once, and every command in it parses with the real ``tunepack`` parser (so a renamed flag or sub-command
fails here, not in a user's shell)."""

from __future__ import annotations

import re
import shlex

import pytest

from support.common import REPO
from mcp_server.cli import build_parser
from mcp_server.server import all_tools

README = (REPO / "docs" / "commands.md").read_text()  # the table moved from the README into docs/


def _table() -> list[tuple[list[str], str]]:
    section = README.split("## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0] != "MCP tool":
            rows.append((re.findall(r"`([a-z_]+)`", cells[0]), cells[1]))
    return rows


def test_every_tool_is_in_the_table_once():
    named = [tool for tools, _ in _table() for tool in tools]
    served = sorted(t.__name__ for t in all_tools())
    assert sorted(named) == served, (sorted(set(served) - set(named)), sorted(set(named) - set(served)))


@pytest.mark.parametrize("tools,cell", _table(), ids=lambda v: v[0] if isinstance(v, list) else None)
def test_each_cli_twin_parses_or_says_why_not(tools, cell):
    if cell == "—":  # no twin: the third column must say why (checked by reading it here)
        row = next(line for line in README.splitlines() if line.startswith(f"| `{tools[0]}`"))
        assert len(row.split("|")[3].strip()) > 40
        return
    command = re.fullmatch(r"`(tunepack [^`]+)`", cell)
    assert command, f"{tools}: the CLI twin must be one `tunepack …` command, got {cell!r}"
    args = build_parser().parse_args(shlex.split(command.group(1))[1:])
    assert callable(args.func)
