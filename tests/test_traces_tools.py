"""The traces_convert MCP tool, called in-process through the MCP client."""

import anyio
from mcp import Client

from mcp_server.server import build_server
from support.traces import FIXTURES


def call(arguments):
    async def main():
        async with Client(build_server()) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools["traces_convert"], await client.call_tool("traces_convert", arguments)
    return anyio.run(main)


def test_traces_convert_returns_short_stats(tmp_path):
    out = tmp_path / "rows.jsonl"
    tool, result = call({"paths": [str(FIXTURES / "opencode")], "output": str(out), "options": {"rows": "turn"}})
    assert not result.is_error, result.content[0].text
    stats = result.structured_content
    assert stats["rows"] == len(out.read_text().splitlines()) == stats["assistant_turns"] > 0
    assert stats["formats"] == {"opencode": 1} and stats["dropped"]["aborted_turn"] == 1
    assert all("description" in schema for schema in tool.input_schema["properties"].values())
    # every conversion option of the CLI is there, because the tool takes the options model itself
    options = tool.input_schema["$defs"]["ConvertOptions"]["properties"]
    assert {"drop_failed_turns", "keep_dangling_tool_calls", "window_context", "redact"} <= set(options)
    _, kept = call({"paths": [str(FIXTURES / "opencode")], "output": str(tmp_path / "all.jsonl"),
                    "options": {"rows": "turn", "drop_failed_turns": False}})
    assert "aborted_turn" not in kept.structured_content["dropped"]
    assert kept.structured_content["rows"] == stats["rows"] + 1


def test_traces_convert_errors_say_what_to_do(tmp_path):
    _, result = call({"paths": [str(tmp_path / "missing")], "output": str(tmp_path / "rows.jsonl")})
    assert result.is_error and "does not exist" in result.content[0].text and "Fix:" in result.content[0].text
