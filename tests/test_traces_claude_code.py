"""Claude Code transcripts: merged API responses, tool results in user lines, branches, sidechains,
compaction boundaries, harness noise, and the shared real transcripts."""

from collections import Counter

from support.traces import FIXTURES, check_structure, raw_lines, rows_of, shared

CC = FIXTURES / "claude_code"


def by_part(rows):
    return {r["part"]: r["messages"] for r in rows}


def test_main_thread_merges_lines_of_one_response(tmp_path):
    rows, report = rows_of(CC / "session.jsonl", tmp_path)
    parts = by_part(rows)
    assert set(parts) == {"main", "sidechain:side-01"}
    main = parts["main"]
    check_structure(main)
    assert main[0] == {"role": "user", "content": "/fix tests/test_math.py\n\nFind why the named test fails and "
                                                  "fix the code, not the test."}
    first = main[1]  # four lines sharing msg_fx_1: thinking, text and two tool_use blocks
    assert first["reasoning_content"] == "Run the test first."
    assert first["content"] == "I'll run the test and read the module."
    assert [c["id"] for c in first["tool_calls"]] == ["toolu_fx_run", "toolu_fx_read"]
    # the results arrived in the other order; they follow the calls' order, and carry the tool names
    assert [(m["tool_call_id"], m["name"]) for m in main[2:4]] == [("toolu_fx_run", "Bash"), ("toolu_fx_read", "Read")]
    assert main[3]["content"] == "def add(a, b):\n    return a - b\n"
    contents = " ".join(m["content"] for m in main)
    assert "ABANDONED" not in contents and "API Error" not in contents and "Total cost" not in contents
    assert "Caveat" not in contents and "Request interrupted" not in contents and "/cost" not in contents
    assert "<system-reminder>The todo list is empty.</system-reminder>" in contents  # kept unless asked
    assert main[-1]["content"] == "add used a - b; it now uses a + b and the test passes."
    assert report.dropped == {"aborted_turn": 1, "error_turn": 1, "harness_noise": 4, "off_branch_turn": 1,
                              "tool_call_without_result": 1}
    assert report.files[0].skipped_types == {"summary": 1, "file-history-snapshot": 1, "system": 1,
                                             "last-prompt": 1, "queue-operation": 1}


def test_system_reminders_go_with_drop_harness_context(tmp_path):
    rows, report = rows_of(CC / "session.jsonl", tmp_path, drop_harness_context=True)
    assert "system-reminder" not in str(rows) and report.dropped["harness_context"] == 1


def test_inline_sidechain_is_its_own_conversation(tmp_path):
    rows, _ = rows_of(CC / "session.jsonl", tmp_path)
    side = by_part(rows)["sidechain:side-01"]
    check_structure(side)
    assert side[0]["content"] == "Search the repo for other uses of add."
    assert side[1]["tool_calls"][0]["function"] == {"name": "Grep", "arguments": {"pattern": "add\\("}}


def test_agent_file_and_compaction_boundary(tmp_path):
    rows, _ = rows_of(CC / "agent-f00dcafe.jsonl", tmp_path)
    assert [r["part"] for r in rows] == ["sidechain:f00dcafe"]
    rows, _ = rows_of(CC / "compacted.jsonl", tmp_path, "c.jsonl")
    assert [r["part"] for r in rows] == ["main", "segment:2"]
    assert rows[0]["messages"][-1]["content"] == "Created notes.txt."
    assert rows[1]["messages"][0]["content"].startswith("This session is being continued")
    assert rows[1]["messages"][0]["content"].endswith("Append a second line.")
    rows, _ = rows_of(CC / "compacted.jsonl", tmp_path, "d.jsonl", compacted=False)
    assert [r["part"] for r in rows] == ["main"] and "Append" in rows[0]["messages"][0]["content"]


def test_shared_transcripts_pair_every_tool_use(tmp_path):
    for name, pairs in [("claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", 12),
                        ("claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", 21),
                        ("agtrace__claude_session.jsonl", 4)]:
        path = shared("claude_code", name)
        lines = raw_lines(path)
        uses = [b["id"] for o in lines if o.get("type") == "assistant" for b in o["message"]["content"]
                if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for o in lines if o.get("type") == "user" and isinstance(o["message"]["content"], list)
                   for b in o["message"]["content"] if b.get("type") == "tool_result"]
        assert len(uses) == pairs and sorted(uses) == sorted(results)
        rows, report = rows_of(path, tmp_path, name)
        for row in rows:
            check_structure(row["messages"])
        out = [c["id"] for r in rows for m in r["messages"] for c in m.get("tool_calls") or []]
        assert sorted(out) == sorted(uses) and report.tool_calls == pairs
        # one assistant turn per API response (message.id), per thread
        responses = {(o.get("isSidechain"), o["message"]["id"]) for o in lines if o.get("type") == "assistant"}
        assert report.assistant_turns == len(responses)


def test_shared_sidechains_become_separate_conversations(tmp_path):
    path = shared("claude_code", "claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    roots = [o for o in raw_lines(path) if o.get("isSidechain") and o.get("parentUuid") is None]
    rows, _ = rows_of(path, tmp_path)
    parts = Counter(r["part"].split(":")[0] for r in rows)
    assert parts == {"main": 1, "sidechain": len(roots)} and len(roots) == 2
    rows, _ = rows_of(shared("claude_code", "agtrace__claude_agent.sidechain.jsonl"), tmp_path, "a.jsonl")
    assert [r["part"].split(":")[0] for r in rows] == ["sidechain"]
    assert rows[0]["messages"][0]["content"] == "Warmup"


def test_shared_thinking_and_schema_coverage_file(tmp_path):
    rows, report = rows_of(shared("claude_code", "agtrace__claude_session.jsonl"), tmp_path)
    thinking = sum(1 for o in raw_lines(shared("claude_code", "agtrace__claude_session.jsonl"))
                   if o.get("type") == "assistant" and o["message"]["content"][0]["type"] == "thinking")
    assert report.thinking == {"kept": thinking, "dropped": 0} == {"kept": 6, "dropped": 0}
    rows, report = rows_of(shared("claude_code", "agent-sessions__claude-small.schema-coverage.synthetic.jsonl"),
                           tmp_path, "cov.jsonl")
    for row in rows:
        check_structure(row["messages"])
    file = report.files[0]
    assert file.malformed_lines == [] and file.issues["duplicate_uuid"] > 0
    assert {"attachment", "progress", "summary", "worktree-state"} <= set(file.skipped_types)
