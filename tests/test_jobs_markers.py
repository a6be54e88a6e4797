"""The log-marker protocol: one definition that every job writes with and every view reads with."""

from __future__ import annotations

import json
import re

from support.common import REPO
from mcp_server.jobs import markers
from mcp_server.jobs.markers import KINDS, emit, marker_line, parse, parse_line


def test_what_is_emitted_parses_back_in_order(capsys):
    emit("METRIC", {"step": 1, "loss": 2.5})
    emit("METRIC", {"step": 2, "loss": float("nan")})
    emit("DONE", {"steps": 2, "path": REPO})  # default=str: paths and the like survive
    log = "noise before\n" + capsys.readouterr().out + "TUNEPACK_METRIC {cut json\nTUNEPACK_NOPE {}\n"
    found = parse(log)
    assert [m["step"] for m in found["METRIC"]] == [1, 2] and found["DONE"][0]["path"] == str(REPO)
    assert set(found) == {"METRIC", "DONE"}  # a cut line and an unknown kind are not markers


def test_only_rank_zero_speaks_except_for_errors(capsys, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    emit("METRIC", {"step": 1})
    emit("ERROR", {"problem": "p", "fix": "f"})
    assert parse(capsys.readouterr().out) == {"ERROR": [{"problem": "p", "fix": "f"}]}


def test_a_line_is_one_kind_and_one_json_object():
    assert parse_line(marker_line("MASK", {"rows": 3})) == ("MASK", {"rows": 3})
    assert parse_line("  TUNEPACK_EVAL [1, 2]") is None and parse_line("TUNEPACK_EVAL") is None
    assert json.loads(marker_line("EVAL", {"a": 1}).split(" ", 1)[1]) == {"a": 1}


def test_every_writer_uses_a_known_kind_and_nobody_else_prints_markers():
    sources = [p for p in (REPO / "mcp_server").rglob("*.py") if p.name != "markers.py"]
    sources += list((REPO / "templates").glob("*.j2"))
    used = set()
    for path in sources:
        text = path.read_text(encoding="utf-8")
        used |= set(re.findall(r'\bemit\("([A-Z_]+)"', text))
        assert not re.search(r'def emit\(|print\(f?"TUNEPACK_', text), f"{path}: write markers with markers.emit"
    assert used and used <= set(KINDS), used - set(KINDS)


def test_the_rendered_scripts_carry_this_very_module():
    from mcp_server.config import load_config
    from mcp_server.methods import render_script

    source = (REPO / "mcp_server" / "jobs" / "markers.py").read_text(encoding="utf-8")
    body = source.split("from __future__ import annotations\n", 1)[1]
    assert body in render_script(load_config(REPO / "examples" / "demo.yaml"))
    assert markers.MARKER_PREFIX == "TUNEPACK_"
