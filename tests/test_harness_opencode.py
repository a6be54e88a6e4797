"""OpenCode (the pinned `opencode-ai` CLI) loads the repository as committed: the config validates, the MCP
server connects (also when started from a subdirectory), the roles, commands and skills are listed, and
the spending tools ask. No login is needed for any of these."""

import json
import re

import pytest

from support.common import REPO
from support.harness import cli, isolated_env, run, skill_names

from mcp_server.harness import COMMANDS, ROLES, SPENDING
from mcp_server.harness.catalog import PAID_COMMANDS, STUDY_SERVER, server_of


@pytest.fixture(scope="module")
def oc(tmp_path_factory):
    binary = cli("opencode")
    env = isolated_env(tmp_path_factory.mktemp("opencode-home"))
    return lambda *args, cwd=REPO: run([binary, *args], env, cwd=cwd)


def test_config_is_accepted_with_server_roles_commands_and_permissions(oc):
    code, out = oc("debug", "config")
    assert code == 0, out
    config = json.loads(out[out.index("{"):])
    assert config["mcp"]["tunepack"]["command"][:2] == ["sh", "-c"]
    assert config["instructions"] == ["agents.md"]
    assert {r.name for r in ROLES} <= set(config["agent"])
    assert {c.name for c in COMMANDS} <= set(config["command"])  # from .opencode/command/*.md
    assert "$ARGUMENTS" in config["command"]["tunepack-train"]["template"]
    assert {f"{server_of(t)}_{t}" for t in SPENDING} <= {k for k, v in config["permission"].items() if v == "ask"}
    assert config["mcp"][STUDY_SERVER]["command"][:2] == ["sh", "-c"]
    assert {f"tunepack {c} *" for c in PAID_COMMANDS} <= {k for k, v in config["permission"]["bash"].items()
                                                         if v == "ask"}


def _action(rules: list[dict], permission: str, subject: str) -> str:
    """What OpenCode decides: the last rule whose permission and wildcard pattern (`*`, `?`) match."""
    decided = "ask"
    for rule in rules:
        pattern = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in rule["pattern"])
        if rule["permission"] in (permission, "*") and re.fullmatch(pattern, subject, re.S):
            decided = rule["action"]
    return decided


def test_the_main_agent_asks_before_paid_shell_commands(oc):
    code, out = oc("debug", "agent", "build")
    assert code == 0, out
    rules = json.loads(out[out.index("{"):])["permission"]
    for line in ("tunepack run examples/demo.yaml --backend hf --flavor a10g-small",
                 ".venv/bin/tunepack jobs submit --backend hf --flavor h200x8 train.py",
                 "tunepack sweep submit examples/sweep.yaml --yes", "tunepack registry publish a --repo me/a --yes",
                 "tunepack traces push --repo me/t", "tunepack budget set demo 50 --yes", "tunepack approve 3f2a",
                 "tunepack serve --http", "tunepack eval run a --tasks humaneval --backend hf"):
        assert _action(rules, "bash", line) == "ask", line
    for line in ("tunepack jobs list", "tunepack budget show demo", "tunepack validate examples/demo.yaml"):
        assert _action(rules, "bash", line) == "allow", line


@pytest.mark.parametrize("where", [".", "mcp_server/server"])
def test_mcp_server_connects_from_the_root_and_a_subdirectory(oc, where):
    code, out = oc("mcp", "list", cwd=REPO / where)
    assert code == 0, out
    line = next((l for l in out.splitlines() if "tunepack" in l and ("✓" in l or "✗" in l)), "")
    assert "✓ tunepack" in line and "connected" in line, out


def test_roles_are_subagents_and_read_only_roles_cannot_spend(oc):
    code, out = oc("agent", "list")
    assert code == 0, out
    for role in ROLES:
        assert f"{role.name} (subagent)" in out, out
    code, out = oc("debug", "agent", "researcher")
    assert code == 0, out
    rules = json.loads(out[out.index("{"):])["permission"]
    last = {}
    for rule in rules:  # OpenCode applies the last matching rule
        last[rule["permission"]] = rule["action"]
    assert last["tunepack_*"] == "deny" and last["tunepack-study_*"] == "deny"
    assert last["tunepack-study_research_papers"] == "allow"
    assert last["edit"] == "deny" and last["bash"] == "deny"
    assert last["tunepack_pipeline_run"] == "ask"  # the global ask, overridden by the deny above (last match)
    assert [r["permission"] for r in rules].index("tunepack_pipeline_run") < \
        [r["permission"] for r in rules].index("tunepack_*")


def test_skills_are_found_through_the_links(oc):
    code, out = oc("debug", "skill")
    assert code == 0, out
    skills = json.loads(out[out.index("["):])
    found = {s["name"]: s["location"] for s in skills}
    assert skill_names() <= set(found), found
    # OpenCode reads .agents/skills and .claude/skills, never skills/ itself: these came through the links
    assert all(("/.agents/skills/" in found[n] or "/.claude/skills/" in found[n]) for n in skill_names())
    assert "tunepack-experiments" in found
