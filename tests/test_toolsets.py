"""Toolsets: the default server keeps the agent's context small and still runs the whole contract; every role's
tools are served by the server its harness entry starts; unknown toolsets are refused with the choices."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from support.common import REPO
from mcp_server.errors import ConfigError
from mcp_server.harness.catalog import ROLES, SERVER, STUDY_SERVER, STUDY_TOOLSETS, server_of
from mcp_server.harness.toolsets import TOOLSETS, parse, tools_of
from test_server import EXPECTED_TOOLS, session

CONTEXT_BUDGET_TOKENS = 6000  # the default tool list, at ~4 characters a token
WITH_OUTPUT_BUDGET = 40_000  # characters, output schemas included


def listed(toolsets: str):
    async def flow(client):
        return (await client.list_tools()).tools

    old = os.environ.get("TUNEPACK_TOOLSETS")
    os.environ["TUNEPACK_TOOLSETS"] = toolsets
    try:
        return session(flow)
    finally:
        os.environ["TUNEPACK_TOOLSETS"] = old or "all"


def context_chars(tools, output: bool = False) -> int:
    return sum(len(json.dumps({"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                              | ({"outputSchema": t.output_schema} if output else {}))) for t in tools)


def test_every_tool_is_in_exactly_one_toolset():
    names = [t for tools in TOOLSETS.values() for t in tools]
    assert sorted(names) == sorted(set(names)) and set(names) == EXPECTED_TOOLS


def test_the_default_set_is_small_and_runs_the_contract():
    core = listed("core")
    names = {t.name for t in core}
    assert names == set(TOOLSETS["core"])
    assert context_chars(core) / 4 <= CONTEXT_BUDGET_TOKENS, context_chars(core)
    assert context_chars(core, output=True) <= WITH_OUTPUT_BUDGET, context_chars(core, output=True)
    published = {t.name: t.output_schema for t in core}
    assert published["sweep_select"]["properties"]["within_noise"]["description"]  # top-level fields keep theirs
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


def _named_tools(skill) -> set[str]:
    text = "\n".join(p.read_text() for p in skill.rglob("*.md") if p.name != "CHANGELOG.md")
    return set(re.findall(r"\b([a-z]+_[a-z_]+)\b", text)) & {t for tools in TOOLSETS.values() for t in tools}


def test_every_tool_a_skill_names_is_served_with_it_or_the_skill_says_where():
    """A skill names only core tools and those of the toolsets its metadata.toolsets declares; reading it through
    a server that lacks them says so first, with the restart line, and says nothing where they are served."""
    from mcp_server.skills import list_skills

    declared = {}
    for info in list_skills():
        allowed = set(TOOLSETS["core"]) | tools_of(tuple(info.toolsets))
        assert _named_tools(Path(info.path)) <= allowed, (info.name, _named_tools(Path(info.path)) - allowed)
        declared[info.name] = info.toolsets
    assert declared["tunepack-viewer"] == ["viewer", "data"] and declared["tunepack-distill"] == []

    async def read(client):
        return [(await client.call_tool("skills_read", {"name": n})).content[0].text
                for n in ("tunepack-viewer", "tunepack-distill", "tunepack-pipeline")]

    os.environ["TUNEPACK_TOOLSETS"] = "core"
    try:
        viewer, distill, pipeline = session(read)
        os.environ["TUNEPACK_TOOLSETS"] = "core,viewer,data"
        served, *_ = session(read)
    finally:
        os.environ["TUNEPACK_TOOLSETS"] = "all"
    # the tools it names that are not served, by name (data_inspect and the like are served: not listed)
    assert viewer.startswith("[This skill also names viewer_splits, viewer_rows") and "(toolset(s) viewer)" in viewer
    assert "data_inspect" not in viewer.split("]")[0]
    assert "tunepack serve --toolsets core,viewer" in viewer and distill.startswith("---")
    # trial (a): a skill whose text names no tool of a toolset it declares has nothing out of reach to announce
    assert pipeline.startswith("---"), pipeline[:200]
    assert served.startswith("---")
