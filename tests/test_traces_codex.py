"""Codex rollouts: response items only, calls paired by call_id, reasoning, harness context,
compaction, and the shared rollouts."""

import json

from support.traces import FIXTURES, check_structure, raw_lines, rows_of, shared

ROLLOUT = FIXTURES / "codex"


def test_rollout_items_become_turns(tmp_path):
    rows, report = rows_of(ROLLOUT, tmp_path)
    assert [r["part"] for r in rows] == ["segment:1", "segment:2"]
    first, second = (r["messages"] for r in rows)
    for messages in (first, second):
        check_structure(messages)
    assert first[0] == {"role": "system", "content": "You are Codex, a coding agent. Be concise.\n\n"
                                                     "<permissions instructions>Sandbox: workspace-write."
                                                     "</permissions instructions>"}
    assert first[1]["role"] == "user" and first[1]["content"].startswith("<environment_context>")
    assert first[1]["content"].endswith("Add a --verbose flag to cli.py.")
    turn = first[2]  # reasoning + two parallel shell calls, one assistant turn
    assert turn["reasoning_content"] == "**Looking at the argument parser**"
    assert [c["function"]["arguments"]["command"] for c in turn["tool_calls"]] == [
        ["rg", "-n", "argparse", "cli.py"], ["cat", "cli.py"]]
    assert [m["tool_call_id"] for m in first[3:5]] == ["call_cx_1", "call_cx_2"]  # outputs came 2, 1
    patch = first[5]["tool_calls"][0]["function"]
    assert patch["name"] == "apply_patch" and patch["arguments"]["input"].startswith("*** Begin Patch")
    assert first[6]["content"] == "Success. Updated the following files:\nM cli.py"
    assert first[-1]["content"] == "Added `--verbose` (store_true) to the parser in cli.py."
    assert second[0]["content"] == ("Add a --verbose flag to cli.py.\n\nSummary so far: --verbose was added to "
                                    "cli.py; tests not run yet.\n\nRun the tests now, please.")
    assert second[-1]["content"] == "All 12 tests pass."
    assert report.dropped == {"empty_assistant_turn": 1, "tool_call_without_result": 1,
                              "tool_result_without_call": 1, "trailing_user_turn": 1}
    skipped = report.files[0].skipped_types
    assert skipped["event_msg"] == 4 and skipped["response_item:web_search_call"] == 1
    assert report.problems == {"unknown_entry_type": 1}


def test_harness_context_can_be_dropped(tmp_path):
    rows, report = rows_of(ROLLOUT, tmp_path, drop_harness_context=True)
    first = rows[0]["messages"]
    assert first[0] == {"role": "user", "content": "Add a --verbose flag to cli.py."}
    assert report.dropped["harness_context"] == 4  # system prompt, developer, environment, AGENTS.md


def test_models_come_from_turn_context(tmp_path):
    rows, _ = rows_of(ROLLOUT, tmp_path, rows="turn", model="gpt-5.1")
    assert [r["completion"][0]["content"] for r in rows] == ["", "All 12 tests pass."]


def test_shared_rollout_pairs_function_and_custom_calls(tmp_path):
    path = shared("codex", "agtrace__codex_session.jsonl")
    items = [line["payload"] for line in raw_lines(path) if line.get("type") == "response_item"]
    calls = [i["call_id"] for i in items if i["type"] in ("function_call", "custom_tool_call")]
    outputs = {i["call_id"] for i in items if i["type"].endswith("_output")}
    summaries = [i for i in items if i["type"] == "reasoning" and any(s.get("text") for s in i["summary"])]
    assert len(calls) == 5 and set(calls) == outputs
    rows, report = rows_of(path, tmp_path)
    messages = rows[0]["messages"]
    check_structure(messages)
    assert [c["id"] for m in messages for c in m.get("tool_calls") or []] == calls
    assert report.thinking["kept"] == len(summaries) == 6
    assert report.tool_calls_by_name == {"shell_command": 4, "apply_patch": 1}
    escalated = [c["function"]["arguments"] for m in messages for c in m.get("tool_calls") or []
                 if c["function"]["arguments"].get("with_escalated_permissions")]
    assert len(escalated) == 1 and isinstance(escalated[0], dict)
    assert json.dumps(rows[0]["tools"])  # inferred schemas for shell_command and apply_patch
    assert {t["function"]["name"] for t in rows[0]["tools"]} >= {"shell_command", "apply_patch"}


def test_shared_review_excerpts_and_coverage_file_do_not_crash(tmp_path):
    for name in ("agtrace__rollout-parent-019b88e0.jsonl", "agtrace__rollout-subagent-019b88e5.jsonl"):
        rows, report = rows_of(shared("codex", name), tmp_path, name)
        assert rows == [] and report.sessions == 1 and report.dropped == {"no_assistant_turn": 1}
    rows, report = rows_of(shared("codex", "agent-sessions__codex-small.schema-coverage.synthetic.jsonl"), tmp_path)
    for row in rows:
        check_structure(row["messages"])
    assert report.files[0].malformed_lines == [] and "response_item:image_generation_call" in report.files[0].skipped_types
    rows, _ = rows_of(shared("codex", "agent-history__codex-session-01.redacted.jsonl"), tmp_path, "h.jsonl")
    assert [m["role"] for m in rows[0]["messages"]] == ["system", "user", "assistant"]
