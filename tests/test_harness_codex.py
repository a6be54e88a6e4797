"""Codex (the pinned `@openai/codex` CLI) in a temporary CODEX_HOME that trusts this clone:
`codex debug prompt-input` spawns the MCP server and prints what the model would see — the server's tool
namespace, the skills (found through .agents/skills), the roles (.codex/agents) and agents.md."""

import json
import re
import tomllib

import pytest

from support.common import REPO
from support.harness import cli, isolated_env, run, skill_names

from mcp_server.harness import ROLES, SPENDING
from mcp_server.harness.catalog import PAID_COMMANDS, SERVER, STUDY_SERVER, server_of


@pytest.fixture(scope="module")
def prompt_input(tmp_path_factory) -> str:
    binary = cli("codex")
    home = tmp_path_factory.mktemp("codex-home")
    codex_home = home / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(f'[projects."{REPO}"]\ntrust_level = "trusted"\n')
    env = isolated_env(home, CODEX_HOME=str(codex_home))
    # required = true makes this probe wait for the server's handshake (the committed config does not force it)
    code, out, err = run([binary, "debug", "prompt-input", "-c", "mcp_servers.tunepack.required=true", "hi"], env,
                         split=True)
    assert code == 0, out + err
    return json.dumps(json.loads(out))  # the model-visible input items, as JSON text


def test_project_config_declares_the_server_and_asks_before_spending():
    config = tomllib.loads((REPO / ".codex" / "config.toml").read_text())
    server = config["mcp_servers"][SERVER]
    assert server["command"] == "sh" and "bin/tunepack-mcp" in server["args"][1]
    asks = {(name, t): v["approval_mode"] for name in (SERVER, STUDY_SERVER)
            for t, v in config["mcp_servers"][name].get("tools", {}).items()}
    assert asks == {(server_of(t), t): "prompt" for t in SPENDING}
    assert "TUNEPACK_TOOLSETS=" in config["mcp_servers"][STUDY_SERVER]["args"][1]
    assert config["project_doc_fallback_filenames"] == ["agents.md"]
    for role in ROLES:
        agent = tomllib.loads((REPO / ".codex" / "agents" / f"{role.name}.toml").read_text())
        assert agent["name"] == role.name and agent["developer_instructions"].strip() == role.prompt.strip()
        assert agent["sandbox_mode"] == ("workspace-write" if role.edit else "read-only")


def test_the_server_namespace_is_visible(prompt_input):
    assert re.search(r"mcp__tunepack: tunepack post-trains small language models", prompt_input), \
        "the tunepack namespace is missing: the server did not connect"


def test_skills_come_through_the_agents_link(prompt_input):
    for name in skill_names():  # plain, or namespaced when Codex reached it through the plugin's skills link
        assert re.search(rf"- (tunepack:)?{name}: ", prompt_input), name
    # Codex reads .agents/skills (not skills/) and plugin folders: the root it reports is the links' target
    assert f"= `{REPO}/skills`" in prompt_input


def test_roles_and_instructions_are_visible(prompt_input):
    for role in ROLES:
        assert f"{role.name}: {{\\n{role.description[:40]}" in prompt_input, role.name
    assert "You post-train small language models with tunepack" in prompt_input  # agents.md


def test_codex_asks_before_paid_shell_commands():
    """The committed rules file as Codex's own policy engine reads it (it loads .codex/rules/*.rules in trusted
    projects): every paid or publishing command prompts, in both spellings; other commands match no rule."""
    binary = cli("codex")
    rules = REPO / ".codex" / "rules" / "tunepack.rules"
    for command in PAID_COMMANDS:
        for program in ("tunepack", ".venv/bin/tunepack"):
            code, out = run([binary, "execpolicy", "check", "--rules", rules, program, *command.split(), "--yes"],
                            {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
            assert code == 0 and json.loads(out)["decision"] == "prompt", (program, command, out)
    code, out = run([binary, "execpolicy", "check", "--rules", rules, "tunepack", "jobs", "list"],
                    {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert code == 0 and json.loads(out)["matchedRules"] == [], out
