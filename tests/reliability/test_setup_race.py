"""`tunepack setup` writes through directory file descriptors: a link swapped in while it runs redirects nothing
(issue [39], item 3).

Setup checks every path for links that lead out of the project before it writes (test_setup_links.py). Before,
the writes then went by path, so a folder replaced by a link to an outside folder between that check and a write
(an agent with a shell racing setup) carried the write outside: on the 7th try in the attacker's review. Now the
project is opened once and every write goes component by component from it with O_NOFOLLOW (harness/beneath.py):
a link met at the write is read, followed when it stays inside, and refused naming it when it leads out; the
changes already made are undone.

- deterministic: the link is swapped in right after the check (and, second case, between two writes);
- a race: a thread keeps swapping a folder for a link to an outside folder while setup runs again and again.
Nothing is ever written outside.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from pathlib import Path

import pytest
from test_setup_links import snapshot

from mcp_server.errors import SetupError
from mcp_server.harness.setup import setup

writer = importlib.import_module("mcp_server.harness.setup")  # the package's `setup` names the function

# (harness, the folder swapped for a link, a file setup writes under it)
FOLDERS = [("claude", ".claude", "settings.json"), ("codex", ".codex", "config.toml"),
           ("opencode", ".opencode", "command"), ("codex", ".agents", "skills")]


@pytest.fixture
def world(tmp_path):
    project, outside, home = tmp_path / "project", tmp_path / "outside", tmp_path / "home"
    for folder in (project, outside / "folder", home):
        folder.mkdir(parents=True)
    (outside / "folder" / "theirs.txt").write_text("keep me\n")
    return project, outside, {"HOME": str(home)}


def _swap_for_link(project: Path, rel: str, target: Path) -> None:
    """What the agent does: move the real folder aside (it stays in the project) and put a link in its place."""
    folder = project / rel
    if folder.is_dir() and not folder.is_symlink():
        folder.rename(project / f"{rel}-moved")
    folder.symlink_to(target)


@pytest.mark.parametrize("harness, rel, below", FOLDERS, ids=[f"{h}:{r}" for h, r, _ in FOLDERS])
def test_a_link_swapped_in_after_the_check_redirects_nothing(world, monkeypatch, harness, rel, below):
    project, outside, env = world
    checked = writer.plan

    def plan_then_swap(*args, **kwargs):
        result = checked(*args, **kwargs)  # every path checked: no link anywhere yet
        _swap_for_link(project, rel, outside / "folder")
        return result

    monkeypatch.setattr(writer, "plan", plan_then_swap)
    before = snapshot(outside)
    with pytest.raises(SetupError) as refused:
        setup(harness, project, env=env)
    said = str(refused.value)
    assert f"{project / rel} is a link to {outside / 'folder'}" in said, said
    assert "appeared while tunepack was writing" in said and "setup changed nothing" in said, said
    assert snapshot(outside) == before  # before: settings.json, the roles, the skills ... written in outside/folder
    assert not (outside / "folder" / below).exists()
    # everything setup had written before it met the link was undone: the project holds only the agent's doing
    assert set(snapshot(project)) == {rel}, sorted(snapshot(project))  # the agent's link alone


def test_a_link_swapped_in_between_two_writes_redirects_nothing(world, monkeypatch):
    project, outside, env = world
    real_do, done = writer._do, []

    def do_then_swap(change, *args, **kwargs):
        real_do(change, *args, **kwargs)
        done.append(change.path)
        if len(done) == 1:  # setup has written its first file; .claude has been checked and (maybe) made
            _swap_for_link(project, ".claude", outside / "folder")

    monkeypatch.setattr(writer, "_do", do_then_swap)
    before = snapshot(outside)
    with pytest.raises(SetupError, match="appeared while tunepack was writing"):
        setup("claude", project, env=env)
    assert snapshot(outside) == before
    assert done[0] == project / ".mcp.json" and not done[0].exists()  # the write before the link was undone


def test_a_racing_swap_never_carries_a_write_outside(world):
    """A thread keeps replacing .claude (and .agents) with links to an outside folder, and putting the real ones
    back, while setup and setup --remove run 40 times."""
    project, outside, env = world
    before = snapshot(outside)
    stop = threading.Event()

    def attacker() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            for rel in (".claude", ".agents"):
                link = project / f"{rel}.link"
                with contextlib.suppress(OSError):
                    link.symlink_to(outside / "folder")
                with contextlib.suppress(OSError):
                    (project / rel).rename(project / f"{rel}-moved-{n}")
                with contextlib.suppress(OSError):
                    link.rename(project / rel)
            time.sleep(0.0005)
            for rel in (".claude", ".agents"):
                if (project / rel).is_symlink():
                    with contextlib.suppress(OSError):
                        (project / rel).unlink()

    thread = threading.Thread(target=attacker, daemon=True)
    thread.start()
    outcomes = {"done": 0, "refused": 0, "failed": 0}
    try:
        for i in range(40):
            try:
                setup("claude", project, remove=bool(i % 2), env=env)
                outcomes["done"] += 1
            except SetupError as exc:
                outcomes["refused" if "is a link to" in str(exc) else "failed"] += 1
            except OSError:  # planning read a folder the agent had just moved away: nothing was written
                outcomes["failed"] += 1
            assert snapshot(outside) == before, (i, outcomes, sorted(set(snapshot(outside)) - set(before)))
    finally:
        stop.set()
        thread.join(timeout=10)
    assert outcomes["refused"] > 0, outcomes  # the race was really run: setup met the link


# --- the helper on its own -------------------------------------------------------------------------------------

def test_links_inside_are_followed_and_links_out_refused_at_the_write(tmp_path):
    from mcp_server.harness.beneath import Beneath

    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    (root / "rel").symlink_to("real")
    (root / "abs").symlink_to(root / "real")
    (root / "file.json").symlink_to("real/target.json")
    (root / "up").symlink_to("../outside")
    (root / "sneaky").symlink_to("real/../../outside")
    (root / "away").symlink_to(outside)
    with Beneath(root, "the project") as beneath:
        beneath.write_text(root / "rel" / "a" / "x.txt", "via a relative link\n")
        beneath.write_text(root / "abs" / "y.txt", "via an absolute link inside\n")
        beneath.write_text(root / "file.json", "{}\n")  # a file link inside: its target is written, the link stays
        for name in ("up", "sneaky", "away"):
            with pytest.raises(SetupError, match=f"{root / name} is a link to .*outside the project"):
                beneath.write_text(root / name / "z.txt", "never\n")
        beneath.write_text(root / "rel" / "a" / "x.txt", None)
        beneath.prune(root / "rel" / "a")  # removes a/, and stops at the link (real/ stays)
    assert (root / "real" / "y.txt").read_text() == "via an absolute link inside\n"
    assert (root / "real" / "target.json").read_text() == "{}\n" and (root / "file.json").is_symlink()
    assert not (root / "real" / "a").exists() and (root / "real").is_dir() and (root / "rel").is_symlink()
    assert list(outside.iterdir()) == []


def test_a_root_that_is_itself_a_link_is_not_opened(tmp_path):
    from mcp_server.harness.beneath import Beneath

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "project").symlink_to(tmp_path / "elsewhere")  # the project folder swapped for a link
    with pytest.raises(OSError):
        Beneath(tmp_path / "project", "the project")
