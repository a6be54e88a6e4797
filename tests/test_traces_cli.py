"""`tunepack traces convert`: short stats JSON on stdout, one-line errors."""

import json

from support.common import run_cli
from support.traces import FIXTURES


def test_convert_prints_short_stats(tmp_path):
    out = tmp_path / "rows.jsonl"
    done = run_cli("traces", "convert", str(FIXTURES / "pi"), str(FIXTURES / "codex"), "-o", str(out),
                   "--thinking", "drop", "--drop-harness-context", "--template", "qwen3")
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["output"] == str(out) and stats["rows"] == len(out.read_text().splitlines()) == 7
    assert stats["formats"] == {"pi": 3, "codex": 1} and stats["thinking"]["kept"] == 0
    assert "files" in stats and isinstance(stats["files_with_issues"], list)
    assert (tmp_path / "rows.stats.json").is_file()


def test_refusal_is_one_line_with_a_fix(tmp_path):
    done = run_cli("traces", "convert", str(FIXTURES), "-o", str(tmp_path / "rows.jsonl"), "--template", "llama3")
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tunepack: error: The chat template 'llama3'")
    assert "Fix:" in lines[0] and "--rows turn" in lines[0]
    done = run_cli("traces", "convert", str(FIXTURES), "-o", str(tmp_path / "rows.jsonl"), "--template", "llama3",
                   "--rows", "turn")
    assert done.returncode == 0, done.stderr
