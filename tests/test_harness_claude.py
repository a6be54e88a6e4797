"""Claude Code (the pinned `@anthropic-ai/claude-code` CLI) in a temporary CLAUDE_CONFIG_DIR: the project's
.mcp.json server connects, the plugin validates, installs from the repository's own marketplace, and the
installed plugin's server connects (from outside the clone too) with its skills, commands and roles.
`claude mcp list` exits 0 even when a server fails, so the tests read its output."""

import json

import pytest

from support.common import REPO
from support.harness import cli, isolated_env, run, skill_names

from mcp_server.harness import COMMANDS, ROLES, SPENDING
from mcp_server.harness.catalog import PAID_COMMANDS, SERVER, STUDY_SERVER, server_of


def _trust(config_dir, *paths) -> None:
    """What accepting the trust dialog writes: project servers then start without a prompt."""
    (config_dir / ".claude.json").write_text(json.dumps(
        {"hasCompletedOnboarding": True, "projects": {str(p): {"hasTrustDialogAccepted": True} for p in paths}}))


@pytest.fixture(scope="module")
def claude(tmp_path_factory):
    binary = cli("claude")
    home = tmp_path_factory.mktemp("claude-home")
    config_dir = home / "claude"
    config_dir.mkdir()
    env = isolated_env(home, CLAUDE_CONFIG_DIR=str(config_dir), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    return lambda *args, cwd=REPO: run([binary, *args], env, cwd=cwd), config_dir, home


def _status(out: str, name: str) -> str:
    line = next((l for l in out.splitlines() if l.startswith(f"{name}:")), "")
    assert line, f"no server '{name}' in:\n{out}"
    return line


def test_project_server_connects(claude):
    run_claude, config_dir, _ = claude
    _trust(config_dir, REPO)
    code, out = run_claude("mcp", "list")
    assert code == 0, out
    assert "✔ Connected" in _status(out, "tunepack"), out
    settings = json.loads((REPO / ".claude" / "settings.json").read_text())
    assert settings["enabledMcpjsonServers"] == [SERVER, STUDY_SERVER]
    asks = set(settings["permissions"]["ask"])
    assert {f"mcp__{server_of(t)}__{t}" for t in SPENDING} == {a for a in asks if a.startswith("mcp__")}
    assert "mcp__tunepack-study__jobs_submit" in asks  # a study tool still asks
    assert {f"Bash(tunepack {c}:*)" for c in PAID_COMMANDS} <= asks  # and the paid shell commands


def test_settings_are_valid_for_claude_code(claude):
    run_claude, _, _ = claude
    code, out = run_claude("doctor")  # reads the project's settings files, no login (no network: see the env)
    assert code == 0 and "Claude Code doctor" in out, out
    assert "Invalid settings" not in out and "Invalid permission rule" not in out, out
    assert (REPO / "CLAUDE.md").read_text().strip() == "@agents.md"


def test_plugin_validates(claude):
    run_claude, _, _ = claude
    code, out = run_claude("plugin", "validate", ".")
    assert code == 0 and "✔ Validation passed" in out, out
    code, out = run_claude("plugin", "validate", ".claude-plugin/tunepack")
    assert code == 0 and "✔ Validation passed" in out, out


def test_plugin_installs_from_the_repo_and_its_server_connects(claude):
    run_claude, config_dir, home = claude
    code, out = run_claude("plugin", "marketplace", "add", "./")
    assert code == 0 and "Successfully added marketplace: tunepack" in out, out
    code, out = run_claude("plugin", "install", "tunepack@tunepack")
    assert code == 0 and "Successfully installed plugin: tunepack@tunepack" in out, out

    code, out = run_claude("plugin", "details", "tunepack@tunepack")
    assert code == 0, out
    inventory = {line.split("(")[0].strip(): line for line in out.splitlines() if "(" in line}
    for name in skill_names() | {c.name for c in COMMANDS}:  # Claude lists commands as skills
        assert name in inventory["Skills"], (name, out)
    for role in ROLES:
        assert role.name in inventory["Agents"], out
    assert "tunepack" in inventory["MCP servers"], out

    elsewhere = home / "another-project"  # not a clone: the launcher finds the environment from its own path
    elsewhere.mkdir()
    code, out = run_claude("mcp", "list", cwd=elsewhere)
    assert code == 0, out
    assert "✔ Connected" in _status(out, "plugin:tunepack:tunepack"), out
    manifest = json.loads((REPO / ".claude-plugin" / "tunepack" / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["mcpServers"]["tunepack"]["env"] == {"TUNEPACK_SKILLS_DIR": "${CLAUDE_PLUGIN_ROOT}/skills"}
