"""Toolsets: the default server keeps the agent's context small and still runs the whole contract; every role's
tools are served by the server its harness entry starts; unknown toolsets are refused with the choices."""

from __future__ import annotations

import json
import os
import re

import pytest

from support.common import REPO
from mcp_server.errors import ConfigError
from mcp_server.harness.catalog import ROLES, SERVER, STUDY_SERVER, STUDY_TOOLSETS, server_of
from mcp_server.harness.toolsets import TOOLSETS, parse, tools_of
from test_server import EXPECTED_TOOLS, session

CONTEXT_BUDGET_TOKENS = 6000  # the default tool list, at ~4 characters a token


def listed(toolsets: str):
    async def flow(client):
        return (await client.list_tools()).tools

    old = os.environ.get("TUNEPACK_TOOLSETS")
    os.environ["TUNEPACK_TOOLSETS"] = toolsets
    try:
        return session(flow)
    finally:
        os.environ["TUNEPACK_TOOLSETS"] = old or "all"


def context_chars(tools) -> int:
    return sum(len(json.dumps({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
               for t in tools)


def test_every_tool_is_in_exactly_one_toolset():
    names = [t for tools in TOOLSETS.values() for t in tools]
    assert sorted(names) == sorted(set(names)) and set(names) == EXPECTED_TOOLS


def test_the_default_set_is_small_and_runs_the_contract():
    core = listed("core")
    names = {t.name for t in core}
    assert names == set(TOOLSETS["core"])
    assert context_chars(core) / 4 <= CONTEXT_BUDGET_TOKENS, context_chars(core)
    contract = (REPO / "skills" / "tunepack-pipeline" / "SKILL.md").read_text()
    walk = contract.split("## The whole contract", 1)[1].split("## What needs a human yes", 1)[0]
    assert set(re.findall(r"`([a-z]+_[a-z_]+)`", walk)) <= names  # every tool the contract names is there
    full = listed("all")
    assert {t.name for t in full} == EXPECTED_TOOLS and context_chars(full) > 2 * context_chars(core)


def test_toolsets_add_up_and_bad_names_are_refused():
    assert tools_of(parse("core,research")) == set(TOOLSETS["core"]) | set(TOOLSETS["research"])
    assert parse(None) == ("core",) and set(parse("all")) == set(TOOLSETS)
    with pytest.raises(ConfigError, match="Unknown toolset"):
        parse("core,everything")


def test_every_role_tool_is_served_where_its_harness_looks():
    served = {SERVER: tools_of(("core",)), STUDY_SERVER: tools_of(STUDY_TOOLSETS)}
    for role in ROLES:
        for tool in role.tools or ():
            assert tool in served[server_of(tool)], (role.name, tool)
    config = json.loads((REPO / "opencode.json").read_text())
    assert config["tools"] == {f"{STUDY_SERVER}_*": False}
    assert config["agent"]["researcher"]["tools"] == {f"{STUDY_SERVER}_*": True}
    assert config["agent"]["researcher"]["permission"][f"{STUDY_SERVER}_research_papers"] == "allow"
