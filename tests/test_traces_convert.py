"""Every shared sample converts, with the counts its source notes give; and the whole folder at once."""

import json

import pytest

from mcp_server.traces import ConvertOptions, convert, find_sources
from support.traces import SHARED_TRACES, check_structure, raw_lines, shared


def shared_sources():
    if not SHARED_TRACES.exists():
        return []
    return find_sources([SHARED_TRACES])[0]


@pytest.mark.skipif(not SHARED_TRACES.exists(), reason=f"shared trace data not found at {SHARED_TRACES}")
@pytest.mark.parametrize("fmt, path", shared_sources(), ids=lambda v: getattr(v, "name", v))
def test_every_shared_sample_converts(tmp_path, fmt, path):
    out = tmp_path / "rows.jsonl"
    report = convert([path], out, ConvertOptions(), allow_empty=True)
    file = report.files[0]
    assert file.format == fmt and "unreadable_source" not in file.issues
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == report.rows == report.conversations
    for row in rows:
        check_structure(row["messages"])
        assert row["format"] == fmt and isinstance(row["tools"], list)
    if path.suffix == ".jsonl":  # an independent count of the objects in the file
        assert file.lines == len(path.read_text().splitlines())
        decoded = raw_lines(path)
        assert len(decoded) >= file.lines - len(file.malformed_lines)


def test_source_notes_counts(tmp_path):
    cases = {
        ("claude_code", "claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"): {"tool_calls": 12},
        ("claude_code", "claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"): {"tool_calls": 21},
        ("codex", "agtrace__codex_session.jsonl"): {"tool_calls": 5},
        ("pi", "sidecar__piagent-session1.v3.synthetic.jsonl"): {"tool_calls": 1, "assistant_turns": 2},
        ("pi", "agent-history__pi-session-01.v3.redacted.jsonl"): {"tool_calls": 0, "assistant_turns": 1},
    }
    for parts, expected in cases.items():
        report = convert([shared(*parts)], tmp_path / "rows.jsonl", ConvertOptions())
        assert {k: getattr(report, k) for k in expected} == expected, parts
    tau = convert([shared("openai_chat", "tau-bench__gpt-4o-airline.first3.derived.json")], None, ConvertOptions())
    assert tau.sessions == 3  # 'Trajectory 1 has no tool calls' still converts
    large = convert([shared("pi", "pi-mono__large-session.v1.jsonl")], None, ConvertOptions())
    assert (large.dropped["aborted_turn"], large.dropped["error_turn"], large.dropped["tool_call_without_result"],
            large.problems["partial_json_leftover"]) == (21, 1, 18, 3)
    glued = convert([shared("pi", "pi-mono__session-d5dde00.v1.jsonl")], None, ConvertOptions())
    assert glued.files[0].malformed_lines == [440] and glued.problems["malformed_line"] == 1


def test_the_whole_shared_folder_in_one_run(tmp_path):
    root = shared()
    report = convert([root], tmp_path / "all.jsonl", ConvertOptions(thinking="drop"))
    assert report.formats == {"pi": 5, "claude-code": 6, "codex": 5, "opencode": 1, "openai": 2}
    assert report.thinking["kept"] == 0 and report.thinking["dropped"] > 150
    stats = json.loads((tmp_path / "all.stats.json").read_text())
    assert stats["rows"] == report.rows and len(stats["files"]) == 19
    short = report.short()
    assert short["files"] == 19 and len(json.dumps(short)) < 9000


def test_a_reader_failure_is_reported_per_file_not_raised(tmp_path, monkeypatch):
    import importlib

    from support.traces import FIXTURES

    module = importlib.import_module("mcp_server.traces.read")

    def broken(path, opts, report):
        raise KeyError("surprise")

    monkeypatch.setitem(module.READERS, "codex", broken)
    report = convert([FIXTURES], tmp_path / "rows.jsonl", ConvertOptions())
    codex = next(f for f in report.files if f.format == "codex")
    assert codex.issues["unreadable_source"] == 1 and "error: KeyError: 'surprise'" in codex.issues
    assert report.problems["unreadable_source"] == 1 and report.rows > 0


def test_damaged_values_anywhere_never_crash(tmp_path):
    """Seeded mutations of the fixtures (wrong types, missing keys) still convert or report, never raise."""
    import copy
    import random

    from mcp_server.traces.read import read_source
    from mcp_server.traces.jsonl import decode_line
    from support.traces import FIXTURES

    rnd = random.Random(11)
    values = [None, 7, "x", [], {}, [1, "a"], {"type": None}, True, [{"type": 3}], {"text": []}]

    def mutate(obj, depth=0):
        keys = list(obj) if isinstance(obj, dict) else list(range(len(obj))) if isinstance(obj, list) else []
        if not keys:
            return
        key = rnd.choice(keys)
        if depth > 3 or rnd.random() < 0.35:
            obj[key] = copy.deepcopy(rnd.choice(values))
        else:
            mutate(obj[key], depth + 1)

    files = sorted(p for p in FIXTURES.rglob("*.jsonl"))
    for trial in range(60):
        source = files[trial % len(files)]
        lines = [o for line in source.read_text().splitlines() for o in decode_line(line)[0]]
        for _ in range(4):
            mutate(rnd.choice(lines))
        target = tmp_path / f"{trial}-{source.name}"
        target.write_text("".join(json.dumps(line) + "\n" for line in lines))
        fmt = source.parent.name.replace("claude_code", "claude-code")
        conversations, report = read_source(fmt, target, ConvertOptions())
        assert "unreadable_source" not in report.issues, (target, report.issues)
        convert([target], tmp_path / "out.jsonl", ConvertOptions(format=fmt), allow_empty=True)
