"""Raw agent sessions are first-class input wherever data is read: a folder of Pi, Claude Code, Codex, OpenCode,
Droid or Hermes sessions given to data_inspect, the viewer, a config (data.format auto) or the mask preview is read
as the chat rows tunepack converts it to, never as broken JSON Lines; an explicit row format over sessions is
refused with the fix. Through the MCP tools an agent calls and the CLI twins a person types."""

from __future__ import annotations

import shutil

import anyio
import pytest
from mcp import Client

from support.common import run_cli
from support.traces import FIXTURES
from mcp_server.server import build_server


def call(name: str, arguments: dict) -> tuple[bool, dict | str]:
    """(is_error, the structured result, or the error's text)."""
    async def go():
        async with Client(build_server()) as client:
            result = await client.call_tool(name, arguments)
            return result.is_error, (result.content[0].text if result.is_error else result.structured_content)

    return anyio.run(go)


@pytest.fixture
def sessions(tmp_path):
    """A project folder as a user has it: Pi sessions and Claude Code sessions side by side."""
    folder = tmp_path / "sessions"
    shutil.copytree(FIXTURES / "pi", folder / "pi")
    shutil.copytree(FIXTURES / "claude_code", folder / "claude")
    return folder


def test_data_inspect_reads_a_session_folder_as_the_rows_it_converts_to(sessions):
    error, report = call("data_inspect", {"path": str(sessions / "pi")})
    assert not error, report
    assert report["format"] == "messages" and report["num_rows"] >= 3
    assert report["conversations"]["roles"]["assistant"] > 0 and report["conversations"]["tool_calls"]
    assert any("holds raw pi agent sessions" in n for n in report["notes"])
    done = run_cli("data", "inspect", str(sessions / "claude"))  # the CLI twin, another harness
    assert done.returncode == 0, done.stderr
    assert "holds raw claude-code agent sessions" in done.stdout


def test_the_viewer_reads_a_session_folder(sessions):
    error, view = call("viewer_traces", {"source": "local", "dataset": str(sessions / "pi")})
    assert not error, view
    assert view["tool_calls"] and any("raw pi agent sessions converted" in n for n in view["notes"])
    error, rows = call("viewer_rows", {"source": "local", "dataset": str(sessions / "pi"), "length": 2})
    assert not error, rows
    assert rows["rows"] and "messages" in rows["rows"][0]["row"]


def test_a_config_over_sessions_reads_them_as_traces_and_a_row_format_over_them_is_refused(sessions, tmp_path):
    auto = tmp_path / "auto.yaml"
    auto.write_text(f"model: {{name: tiny:gemma4}}\ndata: {{path: {sessions / 'pi'}, eval_fraction: 0.3}}\n")
    error, result = call("pipeline_validate", {"config_path": str(auto)})
    assert not error and result["config"]["data"]["format"] == "traces"
    assert "next-action" in result["config"]["eval"]["tasks"]  # the traces defaults follow
    rows = tmp_path / "rows.yaml"
    rows.write_text(f"model: {{name: tiny:gemma4}}\ndata: {{path: {sessions / 'pi'}, format: messages}}\n")
    error, result = call("pipeline_validate", {"config_path": str(rows)})
    assert error and "holds raw pi agent sessions" in result and "Fix: set data.format: traces" in result


def test_the_mask_preview_of_a_traces_config_shows_a_converted_row(sessions, tmp_path):
    config = tmp_path / "traces.yaml"
    config.write_text(f"model: {{name: tiny:gemma4}}\ndata: {{path: {sessions / 'pi'}, format: traces}}\n"
                      "training: {max_length: 1024}\n")
    done = run_cli("data", "preview", str(config), "--row", "1")
    assert done.returncode == 0, done.stderr
    assert "⟦" in done.stdout and "problems: none" in done.stdout
