"""The harness files are rendered from one catalog and the committed ones match it (CI fails on drift);
the launcher starts the server from any directory and fails in one line when the environment is missing."""

import argparse
import json
import os
import shutil
import subprocess
import tomllib

import yaml

from support.common import REPO, run_cli

from mcp_server.cli import build_parser
from mcp_server.harness import COMMANDS, LINKS, ROLES, SPENDING, check, managed_files, mcp_prompt_body, sync
from mcp_server.harness.catalog import LAUNCHER, PAID_COMMANDS, READ_ONLY, SETUP, command
from mcp_server.harness.render import CLONE_PROGRAMS, PLUGIN_DIR


def test_committed_files_match_the_catalog():
    assert check(REPO) == []
    done = run_cli("harness", "check")
    assert done.returncode == 0 and "match the catalog" in done.stdout, done.stdout + done.stderr


def test_every_rendered_file_parses():
    for rel, text in managed_files().items():
        if rel.endswith(".json"):
            json.loads(text)
        elif rel.endswith(".toml"):
            tomllib.loads(text)
        elif rel.endswith(".md") and text.startswith("---"):
            front = yaml.safe_load(text.split("---")[1])
            assert front["description"], rel
    assert not set(SPENDING) & set(READ_ONLY)


def test_roles_and_commands_reach_every_harness():
    files = managed_files()
    config = json.loads(files["opencode.json"])
    for role in ROLES:
        assert config["agent"][role.name]["prompt"] == role.prompt
        assert f".claude/agents/{role.name}.md" in files and f".codex/agents/{role.name}.toml" in files
    for cmd in COMMANDS:
        assert cmd.body in files[f".claude/commands/{cmd.name}.md"]
        assert cmd.body in files[f".opencode/command/{cmd.name}.md"]
        assert "$ARGUMENTS" in cmd.body and "skill" in cmd.body
    worker = next(r for r in ROLES if r.name == "worker")
    assert worker.tools is None and all(r.tools and "pipeline_run" not in r.tools for r in ROLES if r is not worker)


def _commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> dict[tuple[str, ...], set[str]]:
    """Every (sub)command of the CLI with its option strings, and the choices of a first positional action
    (``budget show|set``) as commands of their own."""
    found: dict[tuple[str, ...], set[str]] = {words: set()}
    positional = [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _commands(sub, (*words, name))
        found[words] |= set(action.option_strings)
    for choice in (positional[0].choices or ()) if positional else ():
        found[(*words, choice)] = set()
    return found


def test_every_paid_or_publishing_command_asks_first_in_every_harness():
    commands = _commands(build_parser())
    takes_yes = {words for words, options in commands.items() if "--yes" in options}
    # a command that takes --yes asks first, or its paid action does (`budget set`, not `budget show`)
    missing = {w for w in takes_yes if " ".join(w) not in PAID_COMMANDS
               and not any(words[:len(w)] == w and len(words) > len(w) and " ".join(words) in PAID_COMMANDS
                           for words in commands)}
    assert not missing, f"add these to PAID_COMMANDS in catalog.py: {missing}"
    assert {"serve", "approve", "budget set"} <= set(PAID_COMMANDS)
    assert all(tuple(c.split()) in commands for c in PAID_COMMANDS), "every entry is a real command"
    files = managed_files()
    bash = json.loads(files["opencode.json"])["permission"]["bash"]
    asks = set(json.loads(files[".claude/settings.json"])["permissions"]["ask"])
    rules = files[".codex/rules/tunepack.rules"]
    for cmd in PAID_COMMANDS:
        for program in CLONE_PROGRAMS:
            assert bash[f"{program} {cmd} *"] == "ask" and f"Bash({program} {cmd}:*)" in asks, (program, cmd)
        assert "[[" + ", ".join(json.dumps(p) for p in CLONE_PROGRAMS) + "], " + \
            ", ".join(json.dumps(w) for w in cmd.split()) + "]" in rules, cmd
    assert rules.count('decision = "prompt"') == len(PAID_COMMANDS) and "allow" not in rules


def test_contract_prompt_fills_model_and_dataset():
    text = mcp_prompt_body(command("tunepack-contract"), {"model": "Qwen/Qwen3-0.6B", "dataset": "data/t.jsonl"})
    assert text.startswith("SFT the model Qwen/Qwen3-0.6B on the dataset data/t.jsonl, sweep on several jobs")
    assert "$1" not in text and "$ARGUMENTS" not in text


def test_check_reports_drift_and_sync_repairs_it(tmp_path):
    root = tmp_path / "clone"
    (root / "bin").mkdir(parents=True)
    shutil.copy2(REPO / LAUNCHER, root / LAUNCHER)
    assert len(check(root)) == len(managed_files()) + len(LINKS)
    assert set(sync(root)) >= set(managed_files()) | set(LINKS)
    assert check(root) == []
    (root / "opencode.json").write_text("{}")
    (root / ".claude" / "agents" / "stray.md").write_text("---\nname: stray\n---\n")
    os.unlink(root / ".agents" / "skills")
    problems = check(root)
    assert any("opencode.json differs" in p for p in problems)
    assert any("stray.md is not generated" in p for p in problems)
    assert any(".agents/skills is not a symlink" in p for p in problems)
    done = run_cli("harness", "check", "--root", str(root))
    assert done.returncode == 1 and "tunepack harness sync" in done.stderr
    sync(root)
    assert check(root) == [] and not (root / ".claude" / "agents" / "stray.md").exists()


def _initialize(cmd, cwd, env=None) -> subprocess.CompletedProcess:
    request = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
    return subprocess.run(cmd, input=request + "\n", cwd=cwd, env=env or os.environ.copy(), capture_output=True,
                          text=True, timeout=60)


def test_launcher_starts_the_server_from_a_subdirectory():
    done = _initialize(["sh", "-c", json.loads(managed_files()[".mcp.json"])["mcpServers"]["tunepack"]["args"][1]],
                       REPO / "mcp_server" / "ledger")
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"]["name"] == "tunepack", done.stderr


def test_launcher_without_an_environment_says_how_to_set_it_up(tmp_path):
    (tmp_path / "bin").mkdir()
    shutil.copy2(REPO / LAUNCHER, tmp_path / LAUNCHER)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no tunepack on PATH, not a git work tree
    done = subprocess.run([str(tmp_path / LAUNCHER)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and SETUP in lines[0], lines  # the README's set-up command, verbatim
    assert SETUP in (REPO / "README.md").read_text()


def test_every_client_config_lets_jobs_wait_finish_its_longest_wait():
    """jobs_wait may hold one call MAX_WAIT_S; each harness's own limit on an MCP call must be longer, or the
    client drops the answer of a wait it asked for (OpenCode's default is 30 s, Codex's 60 s)."""
    from mcp_server.server.job_tools import MAX_WAIT_S
    files = managed_files()
    opencode = json.loads(files["opencode.json"])["mcp"]
    assert opencode and all(s["timeout"] > MAX_WAIT_S * 1000 for s in opencode.values())
    claude = json.loads(files[".mcp.json"])["mcpServers"]
    plugin = json.loads(files[f"{PLUGIN_DIR}/.claude-plugin/plugin.json"])["mcpServers"]
    assert all(s["timeout"] > MAX_WAIT_S * 1000 for s in [*claude.values(), *plugin.values()])
    codex = tomllib.loads(files[".codex/config.toml"])["mcp_servers"]
    assert codex and all(s["tool_timeout_sec"] > MAX_WAIT_S for s in codex.values())
