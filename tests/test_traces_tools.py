"""The traces_convert MCP tool, called in-process through the MCP client."""

import anyio
from mcp import Client

from mcp_server.server import build_server
from traces_support import FIXTURES


def call(arguments):
    async def main():
        async with Client(build_server()) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools["traces_convert"], await client.call_tool("traces_convert", arguments)
    return anyio.run(main)


def test_traces_convert_returns_short_stats(tmp_path):
    out = tmp_path / "rows.jsonl"
    tool, result = call({"paths": [str(FIXTURES / "opencode")], "output": str(out), "rows": "turn"})
    assert not result.is_error, result.content[0].text
    stats = result.structured_content
    assert stats["rows"] == len(out.read_text().splitlines()) == stats["assistant_turns"] > 0
    assert stats["formats"] == {"opencode": 1} and stats["dropped"]["aborted_turn"] == 1
    assert all("description" in schema for schema in tool.input_schema["properties"].values())


def test_traces_convert_errors_say_what_to_do(tmp_path):
    _, result = call({"paths": [str(tmp_path / "missing")], "output": str(tmp_path / "rows.jsonl")})
    assert result.is_error and "does not exist" in result.content[0].text and "Fix:" in result.content[0].text
