"""`tunepack setup` stays inside the folder it sets up, and a malformed config gets one clean error (issue [18],
item 7, the setup half).

- a link — the config file itself, or any folder above a file setup writes — whose target lies outside the project
  (for ``--user``: outside HOME, or outside the folder CODEX_HOME / CLAUDE_CONFIG_DIR names) refuses the whole run,
  naming the link and where it points; nothing is written anywhere, inside or out, on setup and on ``--remove``;
- links that stay inside the project are followed;
- invalid JSON / TOML, text that is not UTF-8, nesting deeper than 100, a JSON top level that is not an object,
  something that is not a file: one ``SetupError`` naming the file, what is wrong and the fix; the file untouched;
- a write that fails half way undoes the writes before it.

Every case builds a project and an "outside" folder under ``tmp_path`` and compares snapshots of both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_server.errors import SetupError
from mcp_server.harness.config_files import MAX_DEPTH
from mcp_server.harness.setup import HARNESSES, setup


def snapshot(root: Path) -> dict[str, object]:
    """Every folder, file (bytes) and link (target) under ``root``."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        found[rel] = ("link", os.readlink(path)) if path.is_symlink() else \
            path.read_bytes() if path.is_file() else "dir"
    return found


@pytest.fixture
def world(tmp_path):
    """A project, a folder outside it (with a config file and a folder in it) and a HOME for the env."""
    project, outside, home = tmp_path / "project", tmp_path / "outside", tmp_path / "home"
    for folder in (project, outside / "folder", home):
        folder.mkdir(parents=True)
    (outside / "theirs.json").write_text('{"keep": "me"}\n')
    (outside / "theirs.toml").write_text('model = "o4"\n')
    (outside / "secret.txt").write_text("root:$6$not-json:19000:0:99999:7:::\n")
    return project, outside, {"HOME": str(home)}


def _link(project: Path, rel: str, target: Path) -> None:
    (project / rel).parent.mkdir(parents=True, exist_ok=True)
    (project / rel).symlink_to(target)


def _refused(harness: str, project: Path, env: dict, *, remove: bool = False, user: bool = False) -> str:
    with pytest.raises(SetupError) as refused:
        setup(harness, None if user else project, user=user, remove=remove, env=env)
    return str(refused.value)


# (harness, link inside the project, target under `outside`)
ESCAPES = [
    ("opencode", "opencode.json", "theirs.json"),  # a config file linked out: that file would be edited
    ("opencode", "opencode.json", "nothing-yet.json"),  # a dangling link: the file would be created outside
    ("opencode", "opencode.json", "secret.txt"),  # refused before it is read: no parse error quoting it
    ("claude", ".mcp.json", "theirs.json"),
    ("claude", ".claude/settings.json", "theirs.json"),
    ("codex", ".codex/config.toml", "theirs.toml"),
    ("codex", ".codex", "folder"),  # a folder linked out: roles and the block would be written there
    ("codex", ".agents", "folder"),  # the skills copy
    ("opencode", ".agents/skills", "folder"),
    ("claude", ".claude", "folder"),
    ("claude", ".claude/commands", "folder"),  # a folder setup reaches after writing others: still nothing written
    ("claude", ".claude/skills", "folder"),  # where setup makes its skill links
    ("opencode", ".opencode", "folder"),
    ("codex", ".codex/agents", "folder"),
]


@pytest.mark.parametrize("harness, rel, target", ESCAPES, ids=[f"{h}:{r}->{t}" for h, r, t in ESCAPES])
def test_a_link_out_of_the_project_refuses_the_whole_run(world, harness, rel, target):
    project, outside, env = world
    _link(project, rel, outside / target)
    before = (snapshot(project), snapshot(outside))
    said = _refused(harness, project, env)
    assert f"{project / rel} is a link to {outside / target}" in said, said
    assert "outside the project" in said and "replace the link with a real file or folder" in said, said
    assert "setup changed nothing" in said and "not valid JSON" not in said and "$6$" not in said
    assert (snapshot(project), snapshot(outside)) == before
    with pytest.raises(SetupError):
        setup(harness, project, dry_run=True, env=env)  # the diff would show the outside file: refused too


def test_a_chain_of_links_that_ends_outside_is_refused(world):
    project, outside, env = world
    (project / "config").mkdir()
    (project / "config" / "opencode.json").symlink_to(outside / "theirs.json")  # inside link -> outside
    (project / "opencode.json").symlink_to("config/opencode.json")
    before = snapshot(outside)
    said = _refused("opencode", project, env)
    assert f"{project / 'opencode.json'} is a link to config/opencode.json ({outside / 'theirs.json'})" in said, said
    assert snapshot(outside) == before


def test_remove_never_deletes_through_a_link_out_of_the_project(world):
    project, outside, env = world
    for harness in HARNESSES:
        setup(harness, project, env=env)
    # the .claude folder moved out and linked back: remove would delete the roles from the outside copy
    (project / ".claude").rename(outside / "claude")
    (project / ".claude").symlink_to(outside / "claude")
    before = snapshot(outside)
    said = _refused("claude", project, env, remove=True)
    assert f"{project / '.claude'} is a link to {outside / 'claude'}" in said, said
    assert snapshot(outside) == before


def test_links_that_stay_inside_the_project_are_followed(world):
    project, outside, env = world
    (project / "config").mkdir()
    (project / "config" / "opencode.json").write_text('{"theme": "dark"}\n')
    (project / "opencode.json").symlink_to("config/opencode.json")
    (project / "shared-agents").mkdir()
    (project / ".agents").symlink_to("shared-agents")
    before = snapshot(outside)
    setup("opencode", project, env=env)
    assert os.readlink(project / "opencode.json") == "config/opencode.json"  # still a link, its target edited
    written = json.loads((project / "config" / "opencode.json").read_text())
    assert written["theme"] == "dark" and "tunepack" in written["mcp"]
    assert (project / "shared-agents" / "skills" / "tunepack-sft" / "SKILL.md").is_file()
    assert snapshot(outside) == before


def test_user_scope_keeps_to_home_or_the_folder_the_environment_names(tmp_path):
    home, outside = tmp_path / "home", tmp_path / "elsewhere" / "codex"
    home.mkdir()
    outside.mkdir(parents=True)
    (home / ".codex").symlink_to(outside)  # ~/.codex linked out of HOME
    said = _refused("codex", home, {"HOME": str(home)}, user=True)
    assert f"{home / '.codex'} is a link to {outside}" in said and "CODEX_HOME" in said, said
    assert list(outside.iterdir()) == []
    # named explicitly, that folder is the root of its own files
    setup("codex", user=True, env={"HOME": str(home), "CODEX_HOME": str(outside)})
    assert (outside / "config.toml").is_file() and (outside / "rules" / "tunepack.rules").is_file()
    (home / ".claude").mkdir()
    (home / ".claude" / "agents").symlink_to(outside)  # a folder inside ~/.claude linked out of HOME
    said = _refused("claude", home, {"HOME": str(home)}, user=True)
    assert f"{home / '.claude' / 'agents'} is a link to {outside}" in said, said


DEEP = MAX_DEPTH + 1
# (harness, file, bytes, what the error says)
MALFORMED = [
    ("opencode", "opencode.json", b'{"mcp": {"a": "\xff"}}\n', "is not UTF-8 text: byte 0xff at offset 15"),
    ("opencode", "opencode.jsonc", b'{"a": 1} // \xfe\n', "is not UTF-8 text: byte 0xfe"),
    ("codex", ".codex/config.toml", b'model = "\xc3\x28"\n', "is not UTF-8 text: byte 0xc3"),
    ("claude", ".mcp.json", b"\xef\xbb\xbf\xff{}", "is not UTF-8 text"),
    ("opencode", "opencode.json", b"[" * 5000 + b"]" * 5000, "nests more than 100 levels deep"),
    ("claude", ".claude/settings.json", b'{"a":' * 3000 + b"1" + b"}" * 3000, "nests more than 100 levels deep"),
    ("claude", ".mcp.json", b'{"a":' * DEEP + b"1" + b"}" * DEEP, "nests more than 100 levels deep"),  # parses
    ("codex", ".codex/config.toml", b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nests more than 100 levels"),
    ("codex", ".codex/config.toml", b"a = " + b"{b = " * 3000 + b"1" + b"}" * 3000 + b"\n", "nests more than 100"),
    ("codex", ".codex/config.toml", b"[" + b".".join([b"t"] * DEEP) + b"]\nx = 1\n", "nests more than 100"),
    ("opencode", "opencode.json", b'{"n": ' + b"1" * 5000 + b"}", "is not JSON setup can read"),
    ("codex", ".codex/config.toml", b"n = " + b"1" * 5000 + b"\n", "is not valid TOML"),
    ("claude", ".mcp.json", b'"just a string"\n', "holds a JSON string, not an object"),
    ("claude", ".mcp.json", b"null\n", "holds a JSON null, not an object"),
    ("opencode", "opencode.json", b"12\n", "holds a JSON number, not an object"),
]


@pytest.mark.parametrize("harness, rel, content, said", MALFORMED,
                         ids=[f"{h}:{r}:{s[:24]}" for h, r, _, s in MALFORMED])
def test_a_malformed_config_gets_one_clean_error_and_stays_untouched(tmp_path, harness, rel, content, said):
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_bytes(content)
    before = snapshot(tmp_path)
    for remove in (False, True):
        with pytest.raises(SetupError) as refused:
            setup(harness, tmp_path, remove=remove, env={"HOME": str(tmp_path)})
        error = refused.value
        assert str(tmp_path / rel) in error.problem and said in error.problem, error.problem
        assert "setup changed nothing" in error.fix and ("move it away" in error.fix or "object" in error.fix)
        assert len(str(error)) < 600  # one message, not a dump of the file
    assert snapshot(tmp_path) == before


def test_a_config_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "opencode.json").mkdir()
    with pytest.raises(SetupError, match="is not a regular file"):
        setup("opencode", tmp_path, env={"HOME": str(tmp_path)})


def test_their_file_that_is_not_utf8_is_kept_not_a_traceback(tmp_path):
    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "reviewer.md").write_bytes(b"---\nname: reviewer\n---\n\xff\n")
    _, text = setup("claude", tmp_path, env={"HOME": str(tmp_path)})
    assert ".claude/agents/reviewer.md: kept" in text
    _, text = setup("claude", tmp_path, remove=True, env={"HOME": str(tmp_path)})
    assert (tmp_path / ".claude" / "agents" / "reviewer.md").read_bytes().endswith(b"\xff\n")


def test_a_write_that_fails_half_way_undoes_the_ones_before(tmp_path):
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"model": "sonnet"}\n')
    (project / ".claude" / "commands").write_text("a file where setup needs a folder\n")
    before = snapshot(project)
    with pytest.raises(SetupError) as refused:
        setup("claude", project, env={"HOME": str(tmp_path)})
    assert ".claude/commands/" in refused.value.problem and "were undone" in refused.value.fix, str(refused.value)
    assert snapshot(project) == before  # .mcp.json, settings.json, the roles: all given back


def test_harness_sync_in_a_clone_does_not_write_through_a_link_out_of_it(tmp_path):
    from mcp_server.harness.render import sync

    clone, outside = tmp_path / "clone", tmp_path / "outside.json"
    clone.mkdir()
    outside.write_text("{}\n")
    (clone / "opencode.json").symlink_to(outside)
    with pytest.raises(SetupError) as refused:
        sync(clone)
    assert f"{clone / 'opencode.json'} is a link to {outside}" in str(refused.value), str(refused.value)
    assert outside.read_text() == "{}\n" and [p.name for p in clone.iterdir()] == ["opencode.json"]
