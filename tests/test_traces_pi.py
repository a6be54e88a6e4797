"""Pi sessions: v1 linear files, v3 trees, compactions, failed turns and the shared real sessions."""

import pytest

from mcp_server.traces.pi import COMPACTION_PREFIX
from support.traces import FIXTURES, check_structure, raw_lines, rows_of, shared

PI = FIXTURES / "pi"


def assistant_texts(rows):
    return [m["content"] for r in rows for m in r["messages"] if m["role"] == "assistant" and m["content"]]


def expected_from_file(path):
    """Independent scan: texts of the non-failed assistant turns in file order, and their answered call ids."""
    entries = raw_lines(path)
    answered = {e["message"]["toolCallId"] for e in entries
                if e.get("type") == "message" and e["message"]["role"] == "toolResult"}
    texts, calls = [], []
    for e in entries:
        m = e.get("message") if e.get("type") == "message" else None
        if not m or m["role"] != "assistant" or m.get("stopReason") in ("aborted", "error"):
            continue
        text = "\n\n".join(b["text"] for b in m["content"] if b["type"] == "text" and b["text"].strip()).strip()
        ids = [b["id"] for b in m["content"] if b["type"] == "toolCall" and b["id"] in answered]
        if text:
            texts.append(text)
        calls.extend(ids)
    return texts, calls


def test_linear_v1_session(tmp_path):
    rows, report = rows_of(PI / "linear.v1.jsonl", tmp_path)
    assert len(rows) == 1
    messages = rows[0]["messages"]
    check_structure(messages)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant",
                                             "user", "assistant", "user", "assistant", "tool", "assistant"]
    first = messages[1]
    assert first["reasoning_content"] == "I should list the folder first."
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in first["tool_calls"]] == [
        ("toolu_a1", "bash", {"command": "ls src"}), ("toolu_a2", "read", {"path": "src/README"})]
    assert messages[2] == {"role": "tool", "tool_call_id": "toolu_a1", "name": "bash", "content": "a.py\nb.py\nREADME"}
    # the aborted turns are gone; the prompts around them and the user's shell command merge into one turn
    assert messages[5]["content"] == ("Now run the tests.\n\nRun them with -q please.\n\nRan `pytest -q`\n```\n"
                                      "3 passed\n```")
    assert messages[6] == {"role": "assistant", "content": "All 3 tests pass."}  # its dangling call dropped
    assert rows[0]["tools"] and {t["function"]["name"] for t in rows[0]["tools"]} == {"bash", "read"}
    file = report.files[0]
    assert file.malformed_lines == [19, 21]
    assert file.issues == {"malformed_line": 2, "unknown_entry_type": 1, "partial_json_leftover": 1,
                           "aborted_turn": 2, "tool_call_without_result": 2, "tool_result_without_call": 1}
    assert report.assistant_turns == 6 and report.tool_calls == 3 and report.thinking == {"kept": 1, "dropped": 0}


def test_failed_turns_can_be_kept_and_dangling_calls_too(tmp_path):
    rows, report = rows_of(PI / "linear.v1.jsonl", tmp_path, drop_failed_turns=False, keep_dangling_tool_calls=True)
    messages = rows[0]["messages"]
    check_structure(messages, dangling_allowed=True)
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert "toolu_b1" in calls and "toolu_c1" in calls
    assert "aborted_turn" not in report.dropped and "tool_call_without_result" not in report.dropped


def test_thinking_can_be_dropped(tmp_path):
    rows, report = rows_of(PI / "linear.v1.jsonl", tmp_path, thinking="drop")
    assert not any("reasoning_content" in m for m in rows[0]["messages"])
    assert report.thinking == {"kept": 0, "dropped": 1}


def test_v1_compaction_splits_into_summarised_and_kept_parts(tmp_path):
    rows, _ = rows_of(PI / "compaction.v1.jsonl", tmp_path)
    assert [r["part"] for r in rows] == ["segment:1", "segment:2"]
    before, after = (r["messages"] for r in rows)
    for messages in (before, after):
        check_structure(messages)
    assert before[0]["content"] == "Write hello.py." and before[-1]["content"] == "Wrote hello.py."
    assert after[0]["content"] == COMPACTION_PREFIX + "The user asked for hello.py; it was written.\n</summary>" + \
        "\n\nRun it."  # the summary, then the entries kept from firstKeptEntryIndex (5: 'Run it.')
    assert [c["id"] for m in after for c in m.get("tool_calls") or []] == ["t2", "t3"]
    assert assistant_texts(rows) == ["Wrote hello.py.", "It prints hi.", "It now prints hello."]


def test_compacted_turns_can_be_left_out(tmp_path):
    rows, _ = rows_of(PI / "compaction.v1.jsonl", tmp_path, compacted=False)
    assert len(rows) == 1 and rows[0]["messages"][0]["content"].startswith(COMPACTION_PREFIX)


def test_v3_tree_follows_the_active_branch(tmp_path):
    rows, report = rows_of(PI / "tree.v3.jsonl", tmp_path)
    everything = [m["content"] for r in rows for m in r["messages"]]
    assert not any("ABANDONED" in c or "Also rename baz" in c for c in everything)
    before, after = (r["messages"] for r in rows)
    assert before[1]["tool_calls"][0]["id"] == "call_x|fc_1" and before[2]["tool_call_id"] == "call_x|fc_1"
    assert after[0]["content"].startswith(COMPACTION_PREFIX) and after[0]["content"].endswith("Show the diff.")
    assert after[1]["reasoning_content"] == "git diff shows it."
    assert assistant_texts(rows) == ["Renaming with sed.", "Renamed.", "The diff replaces foo with bar.", "Committed."]
    # the branch summary and the extension message came before the kept entries: summarised, so trimmed
    assert report.dropped == {"trailing_user_turn": 1}
    assert report.files[0].skipped_types == {"model_change": 1, "session_info": 1, "custom": 1, "label": 1}


def test_v3_custom_message_and_branch_summary_become_user_turns(tmp_path):
    rows, _ = rows_of(PI / "tree.v3.jsonl", tmp_path, compacted=False)
    path = tmp_path / "no-compaction.jsonl"
    lines = [line for line in (PI / "tree.v3.jsonl").read_text().splitlines() if '"compaction"' not in line]
    lines = [line.replace('"parentId": "a0000011"', '"parentId": "a0000010"') for line in lines]
    path.write_text("\n".join(lines) + "\n")
    rows, _ = rows_of(path, tmp_path)
    users = [m["content"] for m in rows[0]["messages"] if m["role"] == "user"]
    assert any(u.startswith("The following is a summary of a branch") and "Tried renaming baz" in u
               and "Reminder from an extension" in u and u.endswith("Show the diff.") for u in users)


def test_model_filter_uses_each_turns_model(tmp_path):
    rows, report = rows_of(PI / "linear.v1.jsonl", tmp_path, rows="turn", model="codex")
    assert [r["completion"][0]["content"] for r in rows] == ["We counted files and ran the tests."]
    assert report.dropped["model_filter"] == 5


@pytest.mark.parametrize("name, compactions", [("pi-mono__large-session.v1.jsonl", 0),
                                               ("pi-mono__session-d5dde00.v1.jsonl", 1)])
def test_every_assistant_turn_of_the_shared_sessions_appears_once_in_order(tmp_path, name, compactions):
    path = shared("pi", name)
    rows, report = rows_of(path, tmp_path)
    assert len(rows) == compactions + 1
    for row in rows:
        check_structure(row["messages"])
    texts, calls = expected_from_file(path)
    assert "\n\n".join(assistant_texts(rows)) == "\n\n".join(texts)
    assert [c["id"] for r in rows for m in r["messages"] for c in m.get("tool_calls") or []] == calls
    assert report.redactions == {}


def test_large_session_counts_match_the_source_notes(tmp_path):
    path = shared("pi", "pi-mono__large-session.v1.jsonl")
    roles = [e["message"]["role"] for e in raw_lines(path) if e.get("type") == "message"]
    assert (roles.count("assistant"), roles.count("toolResult"), roles.count("user")) == (453, 373, 88)
    _, report = rows_of(path, tmp_path)
    assert report.dropped["aborted_turn"] == 21 and report.dropped["error_turn"] == 1
    assert report.dropped["tool_call_without_result"] == 18
    assert report.problems == {"partial_json_leftover": 3}
    assert report.tool_calls == 373  # every result pairs with its call
    assert set(report.tool_calls_by_name) == {"bash", "edit", "read", "write"}


def test_d5dde00_glued_line_and_v1_compaction(tmp_path):
    path = shared("pi", "pi-mono__session-d5dde00.v1.jsonl")
    rows, report = rows_of(path, tmp_path)
    assert report.files[0].malformed_lines == [440]
    entries = raw_lines(path)
    compaction = entries[-1]
    assert compaction["type"] == "compaction" and compaction["firstKeptEntryIndex"] == 355

    def turns(chunk):  # independent: non-failed assistant entries with text or calls
        return sum(1 for e in chunk if e.get("type") == "message" and e["message"]["role"] == "assistant"
                   and e["message"].get("stopReason") not in ("aborted", "error")
                   and any(b["type"] == "toolCall" or (b["type"] == "text" and b["text"].strip())
                           for b in e["message"]["content"]))

    def merged_pairs(chunk):  # consecutive assistant entries (no prompt between) become one turn
        kinds = [e["message"]["role"] for e in chunk if e.get("type") == "message"
                 and e["message"].get("stopReason") not in ("aborted", "error")]
        return sum(1 for a, b in zip(kinds, kinds[1:]) if a == b == "assistant")

    summarised, kept = entries[1:355], entries[355:-1]
    summary_turn = rows[1]["messages"][0]
    assert summary_turn["role"] == "user" and summary_turn["content"].startswith(COMPACTION_PREFIX + "# Context Checkpoint")
    for row, chunk in zip(rows, (summarised, kept)):
        counted = sum(1 for m in row["messages"] if m["role"] == "assistant")
        assert counted == turns(chunk) - merged_pairs(chunk)
    assert report.thinking["kept"] > 150 and report.dropped["aborted_turn"] == 6
