"""OpenCode: the JSON file store, the SQLite store (same rows), export files, steps and tool parts."""

import json
import random
import sqlite3
from pathlib import Path

from support.traces import FIXTURES, check_structure, rows_of, shared

STORAGE = FIXTURES / "opencode" / "storage"
SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT, time_created INTEGER NOT NULL,
                      time_updated INTEGER NOT NULL);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id), parent_id TEXT,
                      slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
                      time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id),
                      time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT NOT NULL, message_id TEXT NOT NULL REFERENCES message(id), session_id TEXT NOT NULL,
                   time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL, {key});
"""
PART_KEY = "PRIMARY KEY (id)"
# The shared synthetic store reuses part ids across messages, which OpenCode itself never does.
RELAXED_PART_KEY = "PRIMARY KEY (message_id, id)"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def storage_to_sqlite(storage: Path, db: Path, part_key: str = PART_KEY) -> Path:
    """The file store's objects in OpenCode's SQLite layout: id columns split out, the rest as JSON data."""
    con = sqlite3.connect(db)
    con.executescript(SCHEMA.format(key=part_key))
    for path in storage.glob("project/*.json"):
        p = load(path)
        con.execute("INSERT INTO project VALUES (?, ?, ?, ?, ?)",
                    (p["id"], p["worktree"], p.get("vcs"), p["time"]["created"], p["time"].get("updated", 0)))
    sessions = [load(p) for p in storage.glob("session/*/*.json")]
    for s in sessions:
        if not con.execute("SELECT 1 FROM project WHERE id = ?", (s["projectID"],)).fetchone():
            con.execute("INSERT INTO project VALUES (?, '/', NULL, 0, 0)", (s["projectID"],))
        con.execute("INSERT INTO session VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (s["id"], s["projectID"], s.get("parentID"), s.get("slug", s["id"]), s["directory"], s["title"],
                     s["version"], s["time"]["created"], s["time"]["updated"]))
    messages = [load(p) for p in storage.glob("message/*/*.json")]
    parts = [load(p) for p in storage.glob("part/*/*.json")]
    random.Random(7).shuffle(messages)
    random.Random(7).shuffle(parts)
    for m in messages:
        data = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
        con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (m["id"], m["sessionID"], m["time"]["created"],
                                                                  m["time"]["created"], json.dumps(data)))
    for p in parts:
        data = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
        con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (p["id"], p["messageID"], p["sessionID"], 0, 0,
                                                                   json.dumps(data)))
    con.commit()
    con.close()
    return db


def without_source(rows):
    return [{k: v for k, v in r.items() if k != "source"} for r in rows]


def test_file_store_sessions_steps_and_tool_parts(tmp_path):
    rows, report = rows_of(STORAGE, tmp_path)
    assert [(r["session"], r["part"]) for r in rows] == [
        ("ses_01main", "segment:1"), ("ses_01main", "segment:2"), ("ses_02child", "subagent-of:ses_01main")]
    for row in rows:
        check_structure(row["messages"])
    first = rows[0]["messages"]
    # one assistant message with three steps → three turns; the running call has no result and is dropped
    assert [m["role"] for m in first[:6]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert first[1]["reasoning_content"] == "The year is probably hard-coded." and first[1]["content"] == \
        "Searching for the year."
    assert [c["function"]["name"] for c in first[3]["tool_calls"]] == ["edit"]
    assert first[5]["content"] == "Changed 2023 to 2025 in footer.html."
    assert first[6]["content"] == "Also make it automatic.\n\nUse a build-time variable instead."  # aborted reply gone
    assert first[8] == {"role": "tool", "tool_call_id": "toolu_oc_fail", "name": "bash", "content": "exit code 1"}
    assert rows[1]["messages"][0]["content"].startswith("Summary: the footer year was fixed")
    assert report.dropped == {"aborted_turn": 1, "file_part_omitted": 1, "tool_call_without_result": 1}
    assert report.sessions == 2 and report.files[0].lines == len(list(STORAGE.glob("*/*/*.json")))


def test_sqlite_store_gives_the_same_rows_as_the_file_store(tmp_path):
    db = storage_to_sqlite(STORAGE, tmp_path / "opencode.db")
    from_files, _ = rows_of(STORAGE, tmp_path, "files.jsonl")
    from_db, report = rows_of(db, tmp_path, "db.jsonl")
    assert report.formats == {"opencode": 1}
    assert without_source(from_db) == without_source(from_files) and len(from_db) == 3


def test_sqlite_store_of_the_shared_sidecar_storage(tmp_path):
    storage = shared("opencode", "sidecar-storage")
    db = storage_to_sqlite(storage, tmp_path / "opencode.db", RELAXED_PART_KEY)
    from_files, files_report = rows_of(storage, tmp_path, "files.jsonl")
    from_db, _ = rows_of(db, tmp_path, "db.jsonl")
    assert without_source(from_db) == without_source(from_files)
    tool_parts = [p for p in storage.glob("part/*/*.json") if load(p)["type"] == "tool"]
    assert files_report.tool_calls == len(tool_parts) == 1
    messages = from_files[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[2]["content"] == load(tool_parts[0])["state"]["output"]


def test_export_file(tmp_path):
    info = load(STORAGE / "session" / "proj_demo" / "ses_02child.json")
    export = {"info": info, "messages": []}
    for path in sorted((STORAGE / "message" / "ses_02child").glob("*.json")):
        message = load(path)
        export["messages"].append({"info": message, "parts": [load(p) for p in
                                                              sorted((STORAGE / "part" / message["id"]).glob("*.json"))]})
    path = tmp_path / "ses_02child.json"
    path.write_text(json.dumps(export))
    rows, report = rows_of(path, tmp_path)
    assert report.formats == {"opencode": 1}
    assert rows[0]["messages"][-1]["content"] == "Only footer.html renders it."
