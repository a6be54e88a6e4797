"""Row shapes and filters: prompt/completion rows per turn, model, minimum turns, token limits."""

from pathlib import Path

import pytest

from mcp_server.errors import TraceError
from mcp_server.traces import ConvertOptions, convert
from support.traces import FIXTURES, rows_of


def test_turn_rows_one_per_assistant_turn(tmp_path):
    conversations, _ = rows_of(FIXTURES / "claude_code", tmp_path, "c.jsonl")
    turns, report = rows_of(FIXTURES / "claude_code", tmp_path, "t.jsonl", rows="turn")
    key = lambda r: (r["source"], r["session"], r["part"])  # noqa: E731
    expected = [(*key(c), i) for c in conversations for i, m in enumerate(c["messages"]) if m["role"] == "assistant"]
    assert [(*key(r), r["turn"]) for r in turns] == expected
    for row in turns:
        source = next(c for c in conversations if key(c) == key(row))
        assert row["prompt"] == source["messages"][:row["turn"]] and row["completion"] == [source["messages"][row["turn"]]]
        assert row["tools"] == source["tools"] and "messages" not in row
    assert report.row_format == "turn" and report.rows == report.assistant_turns == len(expected)


def test_min_assistant_turns_and_model_filters(tmp_path):
    rows, report = rows_of(FIXTURES / "claude_code", tmp_path, min_assistant_turns=3)
    assert [(Path(r["source"]).name, r["part"]) for r in rows] == [("session.jsonl", "main")]
    assert report.dropped["min_assistant_turns"] == 4
    rows, report = rows_of(FIXTURES / "claude_code", tmp_path, "h.jsonl", model="HAIKU")
    assert [r["part"] for r in rows] == ["sidechain:f00dcafe"] and report.dropped["model_filter"] == 4


def test_max_tokens_counts_with_a_local_tokenizer(tmp_path, tiny_model_dir):
    opts = dict(tokenizer=str(tiny_model_dir), template="qwen3")
    rows, report = rows_of(FIXTURES / "codex", tmp_path, **opts)
    assert report.token_counter.startswith("tokenizer ") and report.tokens > 0
    from transformers import AutoTokenizer

    import trl

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    training = (Path(trl.__file__).parent / "chat_templates" / "qwen3_training.jinja").read_text()
    lengths = [len(tokenizer.apply_chat_template(r["messages"], tools=r["tools"], tokenize=True, return_dict=True,
                                                 chat_template=training)["input_ids"]) for r in rows]
    assert report.tokens == sum(lengths)
    limit = min(lengths)
    kept, report = rows_of(FIXTURES / "codex", tmp_path, "k.jsonl", max_tokens=limit, **opts)
    assert len(kept) == sum(1 for n in lengths if n <= limit) and report.dropped["max_tokens"] == len(rows) - len(kept)


def test_max_tokens_needs_a_tokenizer(tmp_path):
    with pytest.raises(TraceError, match="needs a tokenizer"):
        convert([FIXTURES], tmp_path / "rows.jsonl", ConvertOptions(max_tokens=100))
    with pytest.raises(TraceError, match="does not exist"):
        convert([FIXTURES], tmp_path / "rows.jsonl", ConvertOptions(max_tokens=100, tokenizer=str(tmp_path / "none")))
