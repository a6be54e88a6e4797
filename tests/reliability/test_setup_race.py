"""``harness/beneath.py``: writes under a root through directory file descriptors (issue [39], item 3). A link met
at the write is followed when it stays inside the root and refused, naming it, when it leads out; the root itself
is opened with O_NOFOLLOW."""

from __future__ import annotations

import pytest

from mcp_server.errors import SetupError

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
