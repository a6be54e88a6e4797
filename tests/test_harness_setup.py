"""`tunepack setup opencode|codex|claude` adds tunepack to a project outside this clone, next to the project's
own MCP server, and to a user's config. The real CLIs (pinned in package.json) load the result with no login:
each probe runs once, all of them at the same time, in a module fixture; the assertions read their output.
Then: a second run changes nothing, --remove gives back the files as they were, --dry-run writes nothing, a
malformed config is refused before anything is written, and the configured server starts and lists its tools."""

import argparse
import contextlib
import io
import json
import os
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.common import REPO
from support.harness import cli, isolated_env, run, skill_names

from mcp_server.errors import SetupError
from mcp_server.harness import COMMANDS, ROLES, SPENDING
from mcp_server.harness.catalog import PAID_COMMANDS, SERVER, STUDY_SERVER, STUDY_TOOLSETS, server_of
from mcp_server.harness.cli import add_setup_parser
from mcp_server.harness.setup import HARNESSES, programs, setup
from mcp_server.harness.toolsets import TOOLSETS

THEIR_SERVER = '''"""A project's own MCP server (stdio JSON-RPC, one tool), standing in for whatever they run."""
import json
import sys

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    result = {}
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "theirs", "version": "1.0"}, "instructions": "Their own server."}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "hello", "description": "Say hello.", "inputSchema": {"type": "object"}}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
'''
CODEX_THEIRS = '''# Their Codex settings: these comments and this order must survive setup and remove.
approval_policy = "on-request"  # theirs

[mcp_servers.theirs]
command = {python}
args = [{script}]

[mcp_servers.theirs.env]
GREETING = "hi"
'''


def _json(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


def their_project(folder: Path) -> Path:
    """A project with its own MCP server configured for all three harnesses (and nothing of tunepack's)."""
    script = folder / "tools" / "their_server.py"
    script.parent.mkdir(parents=True)
    script.write_text(THEIR_SERVER)
    argv = [sys.executable, str(script)]
    (folder / "opencode.json").write_text(_json({"$schema": "https://opencode.ai/config.json",
                                                 "mcp": {"theirs": {"type": "local", "command": argv}},
                                                 "permission": {"bash": "ask"}}))
    (folder / ".codex").mkdir()
    (folder / ".codex" / "config.toml").write_text(CODEX_THEIRS.format(python=json.dumps(argv[0]),
                                                                       script=json.dumps(argv[1])))
    (folder / ".mcp.json").write_text(_json({"mcpServers": {"theirs": {"type": "stdio", "command": argv[0],
                                                                       "args": argv[1:]}}}))
    (folder / ".claude").mkdir()
    (folder / ".claude" / "settings.json").write_text(_json({"model": "sonnet", "enabledMcpjsonServers": ["theirs"],
                                                             "permissions": {"allow": ["Bash(ls:*)"]}}))
    return folder


def snapshot(root: Path) -> dict[str, object]:
    """Every folder, file (bytes) and link (target) under ``root``."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        found[rel] = ("link", os.readlink(path)) if path.is_symlink() else path.read_bytes() if path.is_file() else "dir"
    return found


def _own_data(env: dict, folder: Path) -> dict:
    """The same HOME and config, with OpenCode's database elsewhere: two OpenCodes at once race on its creation."""
    dirs = {f"XDG_{kind.upper()}_HOME": str(folder / kind) for kind in ("data", "cache", "state")}
    for path in dirs.values():
        Path(path).mkdir(parents=True)
    return {**env, **dirs}


def _line(out: str, *marks: str) -> str:
    return next((line for line in out.splitlines() if all(m in line for m in marks)), "")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Setup for every harness in a project outside the clone (twice) and in a user's HOME, then every probe."""
    binaries = {name: cli(name) for name in ("opencode", "codex", "claude")}
    root = tmp_path_factory.mktemp("setup-world")
    assert REPO not in root.parents
    project = their_project(root / "their-project")
    before = snapshot(project)

    home = root / "home-project"  # the project probes: a HOME that only trusts the project
    env = isolated_env(home, CODEX_HOME=str(home / "codex"), CLAUDE_CONFIG_DIR=str(home / "claude"))
    (home / "codex").mkdir()
    (home / "codex" / "config.toml").write_text(f'[projects."{project}"]\ntrust_level = "trusted"\n')
    (home / "claude").mkdir()
    (home / "claude" / ".claude.json").write_text(json.dumps(
        {"hasCompletedOnboarding": True, "projects": {str(project): {"hasTrustDialogAccepted": True}}}))
    first = {h: setup(h, project, env=env)[1] for h in HARNESSES}
    after = snapshot(project)
    second = {h: setup(h, project, env=env)[1] for h in HARNESSES}
    again = snapshot(project)  # before the probes: OpenCode writes a .opencode/.gitignore of its own

    user_home = root / "home-user"  # --user: the user-level files of each harness, used from any folder
    user_env = isolated_env(user_home, CODEX_HOME=str(user_home / "codex"),
                            CLAUDE_CONFIG_DIR=str(user_home / "claude"))
    (user_home / "codex").mkdir()
    (user_home / "codex" / "config.toml").write_text('# my Codex defaults\nhide_agent_reasoning = true\n')
    (user_home / "claude").mkdir()
    (user_home / "claude" / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True, "numStartups": 3}))
    user_out = {h: setup(h, user=True, env=user_env)[1] for h in HARNESSES}
    elsewhere = user_home / "some-other-project"
    elsewhere.mkdir()

    probes = {
        "opencode mcp": (["opencode", "mcp", "list"], env, project),
        "opencode config": (["opencode", "debug", "config"], _own_data(env, home / "second"), project),
        # stdout alone: the model-visible input as JSON (the study server is proven by the other two harnesses)
        "codex prompt": (["codex", "debug", "prompt-input", "-c", f"mcp_servers.{SERVER}.required=true",
                          "-c", f"mcp_servers.{STUDY_SERVER}.enabled=false", "hi"], env, project, True),
        "codex mcp": (["codex", "mcp", "list"], env, project),
        "claude mcp": (["claude", "mcp", "list"], env, project),
        "user opencode config": (["opencode", "debug", "config"], _own_data(user_env, user_home / "second"), elsewhere),
        "user codex mcp": (["codex", "mcp", "list"], user_env, elsewhere),
        "user claude mcp": (["claude", "mcp", "get", SERVER], user_env, elsewhere),  # starts that one server
    }
    with ThreadPoolExecutor(3) as pool:  # the slow ones first
        futures = {key: pool.submit(run, [binaries[argv[0]], *argv[1:]], penv, cwd, 180, *split)
                   for key, (argv, penv, cwd, *split) in probes.items()}
        outputs = {key: future.result() for key, future in futures.items()}
    return {"project": project, "before": before, "after": after, "again": again, "first": first, "second": second,
            "user_home": user_home, "user_out": user_out, "out": outputs}


def test_setup_writes_outside_the_clone_and_a_second_run_changes_nothing(world):
    project = world["project"]
    for harness in HARNESSES:
        assert "tunepack is set up for" in world["first"][harness], world["first"][harness]
        assert world["second"][harness].startswith("nothing changed: tunepack is already set up"), world["second"]
    assert world["again"] == world["after"]
    assert f"pitfalls that skills_add_pitfall records go to {project}/.agents/skills" in world["first"]["opencode"]
    copied = {p.parent.name for p in (project / ".agents" / "skills").glob("*/SKILL.md")}
    assert copied == skill_names()


def test_opencode_connects_tunepack_next_to_their_server(world):
    code, out = world["out"]["opencode mcp"]
    assert code == 0, out
    for name in ("theirs", SERVER, STUDY_SERVER):
        assert "connected" in _line(out, f"✓ {name} "), out
    code, out = world["out"]["opencode config"]
    assert code == 0, out
    config = json.loads(out[out.index("{"):])
    assert {"theirs", SERVER, STUDY_SERVER} <= set(config["mcp"])
    assert {r.name for r in ROLES} <= set(config["agent"])
    assert {c.name for c in COMMANDS} <= set(config["command"])
    asks = {k for k, v in config["permission"].items() if v == "ask"}
    assert {f"{server_of(t)}_{t}" for t in SPENDING} | {"bash"} <= asks
    # their `"bash": "ask"` already asks before every command, tunepack's paid ones included: it stays theirs
    assert json.loads((world["project"] / "opencode.json").read_text())["permission"]["bash"] == "ask"


def test_codex_spawns_the_server_and_sees_roles_and_skills(world):
    code, out, err = world["out"]["codex prompt"]
    assert code == 0, out + err
    prompt = json.dumps(json.loads(out))
    assert "- mcp__tunepack: tunepack post-trains small language models" in prompt, "tunepack did not connect"
    assert "- mcp__theirs: Their own server." in prompt
    for role in ROLES:
        assert f"{role.name}: {{\\n{role.description[:40]}" in prompt, role.name
    for name in skill_names():
        assert f"- {name}: " in prompt, name
    assert f"= `{world['project']}/.agents/skills`" in prompt
    code, out = world["out"]["codex mcp"]
    assert code == 0 and all(_line(out, name, "enabled") for name in ("theirs", SERVER, STUDY_SERVER)), out
    text = (world["project"] / ".codex" / "config.toml").read_text()
    assert text.startswith(world["before"][".codex/config.toml"].decode())  # their lines, byte for byte, first
    asks = {(name, t) for name in (SERVER, STUDY_SERVER)
            for t in tomllib.loads(text)["mcp_servers"][name].get("tools", {})}
    assert asks == {(server_of(t), t) for t in SPENDING}
    rules = (world["project"] / ".codex" / "rules" / "tunepack.rules").read_text()
    assert rules.count('decision = "prompt"') == len(PAID_COMMANDS) and json.dumps(programs()[-1]) in rules


def test_claude_code_connects_tunepack_and_keeps_their_settings(world):
    code, out = world["out"]["claude mcp"]
    assert code == 0, out
    assert "✔ Connected" in _line(out, f"{SERVER}: "), out
    assert "✔ Connected" in _line(out, f"{STUDY_SERVER}: "), out
    assert _line(out, "theirs: "), out
    settings = json.loads((world["project"] / ".claude" / "settings.json").read_text())
    assert settings["model"] == "sonnet" and settings["enabledMcpjsonServers"] == ["theirs", SERVER, STUDY_SERVER]
    assert settings["permissions"]["allow"][0] == "Bash(ls:*)"
    assert set(settings["permissions"]["ask"]) == {f"mcp__{server_of(t)}__{t}" for t in SPENDING} | \
        {f"Bash({p} {c}:*)" for c in PAID_COMMANDS for p in programs()}
    assert (world["project"] / ".claude" / "skills" / "tunepack-sft" / "SKILL.md").is_file()  # through the link


def test_user_scope_works_from_any_folder(world):
    for harness in HARNESSES:
        assert "your user config" in world["user_out"][harness], world["user_out"][harness]
    code, out = world["out"]["user opencode config"]
    assert code == 0, out
    config = json.loads(out[out.index("{"):])
    assert config["mcp"][SERVER]["command"][-1] == "serve" and {r.name for r in ROLES} <= set(config["agent"])
    assert {c.name for c in COMMANDS} <= set(config["command"])
    assert {f"{p} {c} *" for c in PAID_COMMANDS for p in programs()} == set(config["permission"]["bash"])
    code, out = world["out"]["user codex mcp"]
    assert code == 0 and _line(out, SERVER, "enabled"), out
    code, out = world["out"]["user claude mcp"]
    assert code == 0 and "✔ Connected" in _line(out, "Status:") and _line(out, "Scope: User config"), out
    home = world["user_home"]
    assert (home / "codex" / "config.toml").read_text().startswith("# my Codex defaults\nhide_agent_reasoning = true\n")
    assert json.loads((home / "claude" / ".claude.json").read_text())["numStartups"] == 3
    assert (home / ".agents" / "skills" / "tunepack-sft" / "SKILL.md").is_file()


def test_the_configured_servers_start_list_their_tools_and_write_pitfalls_to_the_project(world):
    project = world["project"]
    entries = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    env = {k: v for k, v in os.environ.items() if k != "TUNEPACK_TOOLSETS"}  # the tests' default is every tool

    async def tools(name: str, pitfall: bool = False) -> set[str]:
        entry = entries[name]
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env={**env, **entry["env"]},
                                       cwd=str(project))
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            if pitfall:
                result = await client.call_tool("skills_add_pitfall", {
                    "skill": "tunepack-sft", "symptom": "setup test symptom line",
                    "cause": "a cause long enough", "fix": "a fix long enough"})
                assert not result.is_error, result
            return names

    async def both() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}

        async def one(name: str) -> None:
            found[name] = await tools(name, pitfall=name == SERVER)
        async with anyio.create_task_group() as group:
            group.start_soon(one, SERVER)
            group.start_soon(one, STUDY_SERVER)
        return found

    found = anyio.run(both)
    assert found[SERVER] == set(TOOLSETS["core"])
    assert found[STUDY_SERVER] == {t for name in STUDY_TOOLSETS for t in TOOLSETS[name]}
    recorded = project / ".agents" / "skills" / "tunepack-sft" / "references" / "pitfalls.md"
    assert "setup test symptom line" in recorded.read_text()
    assert "setup test symptom line" not in (REPO / "skills" / "tunepack-sft" / "references" / "pitfalls.md").read_text()


def test_remove_gives_back_their_files_byte_for_byte(tmp_path):
    project = their_project(tmp_path / "p")
    empty = tmp_path / "empty"
    empty.mkdir()
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text("# mine\nmodel = \"o4\"\n")
    before = {p: snapshot(p) for p in (project, empty, home)}
    for harness in HARNESSES:
        setup(harness, project, env=env)
        setup(harness, empty, env=env)
        setup(harness, user=True, env=env)
    assert all(snapshot(p) != before[p] for p in before)
    for harness in ("codex", "opencode", "claude"):  # the shared skills leave with the last harness
        for kwargs in ({"project": project}, {"project": empty}, {"user": True}):
            _, text = setup(harness, remove=True, env=env, **kwargs)
            assert "removed tunepack from" in text, text
    assert {p: snapshot(p) for p in before} == before
    assert setup("claude", project, remove=True, env=env)[1].startswith("nothing changed: tunepack is not set up")


def _face(*argv: str) -> str:
    parser = argparse.ArgumentParser(prog="tunepack")
    add_setup_parser(parser.add_subparsers())
    args = parser.parse_args(["setup", *argv])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        args.func(args)
    return out.getvalue()


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path):
    project = their_project(tmp_path / "p")
    before = snapshot(project)
    for harness in HARNESSES:
        out = _face(harness, "--project", str(project), "--dry-run")
        assert "dry run:" in out and "nothing written" in out, out
    assert snapshot(project) == before
    assert "+++ b/opencode.json" in _face("opencode", "--project", str(project), "--dry-run")
    out = _face("codex", "--project", str(project), "--dry-run")
    assert "+# >>> tunepack setup" in out and "+[mcp_servers.tunepack]" in out and "+++ /dev/null" not in out
    assert "--- /dev/null\n+++ b/.claude/agents/reviewer.md" in _face("claude", "--project", str(project), "--dry-run")


@pytest.mark.parametrize("harness, rel, text, said", [
    ("opencode", "opencode.json", '{"mcp": {},}\n', "not valid JSON"),
    ("opencode", "opencode.json", '{"permission": "allow"}\n', "`permission` is a str"),
    ("codex", ".codex/config.toml", "mcp_servers = { theirs = { command = \"x\" } }\n", "would not be valid TOML"),
    ("codex", ".codex/config.toml", "[mcp_servers.tunepack]\ncommand = \"old\"\n", "outside tunepack's block"),
    ("codex", ".codex/config.toml", "model = \n", "is not valid TOML"),
    ("claude", ".claude/settings.json", '{"permissions": {"ask": "all"}}\n', "is a str, not a list"),
    ("claude", ".mcp.json", "[]\n", "not an object"),
])
def test_a_malformed_config_is_refused_before_anything_is_written(tmp_path, harness, rel, text, said):
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(text)
    before = snapshot(tmp_path)
    with pytest.raises(SetupError) as refused:
        setup(harness, tmp_path, env={"HOME": str(tmp_path)})
    assert said in refused.value.problem and "setup changed nothing" in refused.value.fix, str(refused.value)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("theirs", ["allow", {"*": "allow", "git *": "ask"}])
def test_their_bash_permission_gets_the_paid_asks_after_it_and_back_on_remove(tmp_path, theirs):
    before = _json({"permission": {"bash": theirs, "edit": "ask"}})
    (tmp_path / "opencode.json").write_text(before)
    setup("opencode", tmp_path, env={"HOME": str(tmp_path)})
    bash = json.loads((tmp_path / "opencode.json").read_text())["permission"]["bash"]
    mine = [k for k in bash if "tunepack" in k]
    assert list(bash)[:len(bash) - len(mine)] == ["*"] + (["git *"] if isinstance(theirs, dict) else [])
    assert {f"{p} {c} *" for c in PAID_COMMANDS for p in programs()} == set(mine)  # after theirs: the last match wins
    setup("opencode", tmp_path, remove=True, env={"HOME": str(tmp_path)})
    assert (tmp_path / "opencode.json").read_text() == before


def test_their_same_named_role_is_kept_and_reported(tmp_path):
    mine = "---\nname: reviewer\ndescription: Their own code reviewer.\n---\n\nReview the diff.\n"
    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "reviewer.md").write_text(mine)
    (tmp_path / "opencode.json").write_text(_json({"agent": {"reviewer": {"description": "theirs", "prompt": "x"}}}))
    _, text = setup("claude", tmp_path, env={"HOME": str(tmp_path)})
    assert ".claude/agents/reviewer.md: kept, it differs from tunepack's" in text
    _, text = setup("opencode", tmp_path, env={"HOME": str(tmp_path)})
    assert "kept your `agent.reviewer`" in text
    for harness in ("claude", "opencode"):
        setup(harness, tmp_path, remove=True, env={"HOME": str(tmp_path)})
    assert (tmp_path / ".claude" / "agents" / "reviewer.md").read_text() == mine
    assert json.loads((tmp_path / "opencode.json").read_text()) == {"agent": {"reviewer": {"description": "theirs",
                                                                                          "prompt": "x"}}}


def test_this_clone_is_refused():
    with pytest.raises(SetupError, match="tunepack's own clone"):
        setup("opencode", REPO)
