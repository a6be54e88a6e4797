"""Real agent sessions converted for each family, and the CPU replicas built on them (tests/test_families.py,
bench/families.py). Sessions come from ../shared/data/traces when it is there — the short ones whole and the
first turns of a long Pi session — else from tests/fixtures/traces."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_server.traces import ConvertOptions, convert

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "traces"
FIXTURES = REPO / "tests" / "fixtures" / "traces"
SHORT_SESSIONS = ["claude_code/claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
                  "claude_code/claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
                  "codex/agtrace__codex_session.jsonl", "pi/agent-history__pi-session-01.v3.redacted.jsonl",
                  "pi/agent-sessions__pi-small.v3.jsonl"]
LONG_SESSION = "pi/pi-mono__large-session.v1.jsonl"
OWN_SESSIONS = ["claude_code/session.jsonl", "codex/rollout-2025-09-01T12-00-00-0199aaaa.jsonl", "pi/linear.v1.jsonl"]
FIRST_TURNS = 6  # assistant turns kept of the long session
# family → the stock revisions its replica's tokenizer is checked with (the first is the replica's own)
REVISIONS = {"qwen3": ["qwen3"], "llama3": ["llama3_2", "llama3_1"],
             "gemma4": ["gemma4_v5", "gemma4", "gemma4_v2", "gemma4_v3", "gemma4_v4"]}


def sources() -> tuple[list[Path], Path | None, str]:
    """(short session files, the long one or None, where they come from)."""
    if SHARED.is_dir():
        return [SHARED / p for p in SHORT_SESSIONS], SHARED / LONG_SESSION, "../shared/data/traces"
    return [FIXTURES / p for p in OWN_SESSIONS], None, "tests/fixtures/traces (../shared is absent)"


def first_turns(row: dict, turns: int) -> dict:
    """The row cut after its ``turns``-th assistant turn and the tool results that answer it."""
    seen, cut = 0, len(row["messages"])
    for index, message in enumerate(row["messages"]):
        if message["role"] == "assistant":
            if seen == turns:
                cut = index
                break
            seen += 1
    return {**row, "messages": row["messages"][:cut]}


def converted_rows(folder: Path, template: str | None) -> list[dict]:
    """The sessions converted and shaped for ``template``, the long one cut to its first turns."""
    short, long, _ = sources()
    out = folder / f"rows-{template or 'plain'}.jsonl"
    convert([str(p) for p in short], out, ConvertOptions(template=template))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    if long is not None:
        long_out = folder / f"long-{template or 'plain'}.jsonl"
        convert([str(long)], long_out, ConvertOptions(template=template))
        rows += [first_turns(json.loads(line), FIRST_TURNS) for line in long_out.read_text().splitlines()[:1]]
    return rows


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path
