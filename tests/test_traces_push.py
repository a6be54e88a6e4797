"""Pushing the user's own sessions to a Hub dataset repo (the loopback stand-in): collected from every harness's
default folder under a temporary HOME, redacted before upload with a report by kind, uploaded raw in
per-harness folders to a private repo, incremental by content hash, filtered by project and day, public only
with the human's approval — and read back from the repo into training rows."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from mcp_server.approval import Consent
from mcp_server.errors import TraceError, TunepackError
from mcp_server.traces import convert
from mcp_server.traces.push import PushOptions, push_sessions
from support.traces import FIXTURES

REPO_ID = "alice/my-traces"
# fake secrets, assembled here so that no token-shaped literal sits in the repository
SECRETS = {"hf_token": "hf_" + "Q7" * 17, "openai_key": "sk-proj-" + "x9" * 20, "github_token": "ghp_" + "Zk" * 18,
           "aws_access_key": "AKIA" + "ABCDEFGH" * 2, "bearer_token": "tok." + "y" * 30}
DROID = "2b7c8d4e-1f2a-4b3c-9d8e-7f6a5b4c3d2e"
CODEX = "rollout-2025-09-01T12-00-00-0199aaaa.jsonl"
HERMES_EXPORT = "hermes_session_20260307_080000_0a1b2c.jsonl"
FORMATS = {"pi", "claude-code", "codex", "opencode", "droid", "hermes"}


def place(src: Path, dst: Path, replace: dict[str, str] | None = None) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    text = src.read_text(encoding="utf-8")
    for old, new in (replace or {}).items():
        assert old in text, (src, old)
        text = text.replace(old, new)
    dst.write_text(text, encoding="utf-8")
    return dst


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A HOME with sessions in each harness's own folder, secrets planted in five of them."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TUNEPACK_HOME", str(tmp_path / "tunepack"))
    s = SECRETS
    place(FIXTURES / "pi" / "tree.v3.jsonl", home / ".pi/agent/sessions/--tmp-proj--/2025-01-01_fixture-v3.jsonl",
          {"Rename foo to bar in util.py.": f"Rename foo to bar in util.py. My token: {s['hf_token']}"})
    place(FIXTURES / "claude_code" / "session.jsonl", home / ".claude/projects/-tmp-demo/cc-fixture-1.jsonl",
          {"not the test.": f"not the test. The key is {s['openai_key']}"})
    place(FIXTURES / "codex" / CODEX, home / ".codex/sessions/2025/09/01" / CODEX,
          {"Add a --verbose flag to cli.py.": f"Add a --verbose flag to cli.py. Push with {s['github_token']}"})
    place(FIXTURES / "codex" / CODEX, home / ".codex/archived_sessions" / CODEX)
    shutil.copytree(FIXTURES / "opencode" / "storage", home / ".local/share/opencode/storage")
    droid = home / ".factory/sessions/-home-alice-proj" / f"{DROID}.jsonl"
    place(FIXTURES / "droid" / f"{DROID}.jsonl", droid,  # after an escaped newline, the header's boundary is in the text
          {"1 failed: test_iso_week": f"1 failed: test_iso_week\\ncurl -H 'Authorization: Bearer {s['bearer_token']}'"})
    (droid.parent / f"{DROID}.settings.json").write_text('{"model": "glm-4.6"}')
    for fixture in (FIXTURES / "hermes").iterdir():
        if fixture.suffix in (".json", ".jsonl"):
            place(fixture, home / ".hermes/sessions" / fixture.name,
                  {"Run the unit tests.": f"Run the unit tests. AWS id {s['aws_access_key']}"}
                  if fixture.name == HERMES_EXPORT else None)
    (home / ".hermes/sessions/sessions.json").write_text('{"telegram:42": "20260306_101010_d4e5f6a7"}')
    return home


def planted(home: Path) -> dict[str, int]:
    texts = [p.read_text() for p in home.rglob("*") if p.is_file()]
    return {kind: sum(t.count(secret) for t in texts) for kind, secret in SECRETS.items()}


def commits(hub) -> list:
    return hub.requests("POST", rf"/api/datasets/{REPO_ID}/commit/main")


def test_push_redacts_uploads_raw_layouts_and_is_incremental(hub, home, tmp_path):
    secrets = planted(home)
    assert all(secrets.values())
    dry = push_sessions(None, REPO_ID, PushOptions(dry_run=True))
    assert dry.status == "dry_run" and hub.state.requests == []  # no Hub call at all
    assert dry.redactions == secrets and dry.pushed == dry.found == 10 and dry.private

    first = push_sessions(None, REPO_ID)
    repo = hub.state.repos[REPO_ID]
    assert first.status == "pushed" and repo["type"] == "dataset" and repo["private"] is True and first.private
    assert (first.found, first.pushed, first.unchanged, first.redactions) == (10, 10, 0, secrets)
    assert first.harnesses == {"pi": 1, "claude-code": 1, "codex": 2, "opencode": 2, "droid": 1, "hermes": 3}
    assert first.commit == repo["commits"][-1] and first.url.endswith(f"/datasets/{REPO_ID}")
    assert any("not sessions" in n and "settings.json" in n for n in first.notes)  # the Droid sidecar stays home
    files = repo["files"]
    for path in ("pi/sessions/--tmp-proj--/2025-01-01_fixture-v3.jsonl", "claude_code/projects/-tmp-demo/cc-fixture-1.jsonl",
                 f"codex/sessions/2025/09/01/{CODEX}", f"codex/archived_sessions/{CODEX}",
                 "opencode/storage/session/proj_demo/ses_01main.json", "opencode/storage/message/ses_01main/msg_01u.json",
                 f"droid/sessions/-home-alice-proj/{DROID}.jsonl", f"hermes/sessions/{HERMES_EXPORT}", "README.md"):
        assert path in files, path
    assert not any(p.endswith(("settings.json", "sessions.json")) for p in files)
    blob = b"\n".join(data for path, data in files.items() if path != "README.md").decode()
    assert not any(secret in blob for secret in SECRETS.values())
    assert blob.count("[REDACTED_") == sum(secrets.values()) and "Authorization: Bearer [REDACTED_BEARER_TOKEN]" in blob
    for path, data in files.items():  # still the harness's format: every JSONL line and JSON file parses
        if path.endswith(".jsonl"):
            assert all(json.loads(line) for line in data.decode().splitlines() if line.strip()), path
        elif path.endswith(".json"):
            json.loads(data)
    opencode = home / ".local/share/opencode/storage/part"
    assert all(files[f"opencode/storage/part/{p.relative_to(opencode).as_posix()}"] == p.read_bytes()
               for p in opencode.rglob("*.json"))  # files without secrets go byte for byte

    second = push_sessions(None, REPO_ID)
    assert (second.status, second.pushed, second.unchanged) == ("up_to_date", 0, 10)
    assert second.summary.endswith("10 unchanged") and len(commits(hub)) == 1

    droid = home / ".factory/sessions/-home-alice-proj" / f"{DROID}.jsonl"
    with droid.open("a") as handle:  # the session grows
        handle.write(json.dumps({"type": "message", "id": "m9", "timestamp": "2026-02-10T14:03:00.000Z", "message": {
            "role": "user", "content": [{"type": "text", "text": "Thanks."}]}}) + "\n")
    third = push_sessions(None, REPO_ID)
    assert (third.pushed, third.unchanged, [s.status for s in third.sessions]) == (1, 9, ["changed"])
    assert third.redactions == {"bearer_token": 1} and len(commits(hub)) == 2
    assert [i["value"]["path"] for i in commits(hub)[1].body if i["key"] == "file"] == [
        f"droid/sessions/-home-alice-proj/{DROID}.jsonl"]  # only the grown session (the card went once)

    report = convert([f"hf://datasets/{REPO_ID}"], tmp_path / "rows.jsonl")  # the Hub source trains on it
    assert set(report.formats) == FORMATS and report.rows >= 10 and report.redactions == {}
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert any("[REDACTED_HF_TOKEN]" in m["content"] for r in rows for m in r["messages"])


def test_project_and_day_filters(home):
    mine = push_sessions(None, REPO_ID, PushOptions(project="/home/alice/proj", dry_run=True))
    assert sorted(s.harness for s in mine.sessions) == ["droid", "hermes"] and mine.filtered == {"project": 8}
    march = push_sessions(None, REPO_ID, PushOptions(since=date(2026, 3, 1), dry_run=True))
    assert {s.harness for s in march.sessions} == {"hermes"} and march.pushed == 3 and march.filtered == {"since": 7}
    one = push_sessions(None, REPO_ID, PushOptions(since=date(2026, 3, 5), until=date(2026, 3, 5), dry_run=True))
    assert [Path(s.source).name for s in one.sessions] == ["session_20260305_091523_a1b2c3.json"]
    with pytest.raises(TraceError, match="is after --until"):
        push_sessions(None, REPO_ID, PushOptions(since=date(2026, 3, 6), until=date(2026, 3, 5)))


def test_public_needs_the_humans_yes(hub, home):
    quote = push_sessions(None, REPO_ID, PushOptions(public=True), Consent())
    assert quote.status == "approval_required" and quote.pushed == 0 and REPO_ID not in hub.state.repos
    token = quote.decision.approval_token
    assert token and token in quote.summary and "PUBLIC" in quote.summary
    done = push_sessions(None, REPO_ID, PushOptions(public=True), Consent(token=token))
    assert done.status == "pushed" and not done.private and hub.state.repos[REPO_ID]["private"] is False
    assert done.decision.via == "token"
    (home / ".hermes/sessions/extra.jsonl").write_text(
        (FIXTURES / "hermes" / "20260306_101010_d4e5f6a7.jsonl").read_text())
    again = push_sessions(None, REPO_ID, PushOptions(), Consent())  # private asked, but the repo is public
    assert again.status == "approval_required" and len(commits(hub)) == 1


def test_cli_push_at_the_keyboard_and_the_mcp_tool(hub, home, capfd):
    import argparse

    from mcp_server.traces.cli import add_parser
    from test_server import ok, session

    parser = argparse.ArgumentParser(prog="tunepack")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["traces", "push", str(home / ".hermes/sessions"), "--repo", REPO_ID, "--public",
                              "--yes"])
    args.func(args)  # a person typed --public --yes: that is the approval
    out = json.loads(capfd.readouterr().out)
    assert out["status"] == "pushed" and out["decision"]["via"] == "keyboard" and out["harnesses"] == {"hermes": 3}
    assert hub.state.repos[REPO_ID]["private"] is False
    args = parser.parse_args(["traces", "push", "--repo", REPO_ID, "--since", "2026-13-01"])
    with pytest.raises(TraceError, match="Bad push option: --since"):
        args.func(args)

    async def flow(client):
        quote = ok(await client.call_tool("traces_push", {"repo": "alice/other", "public": True}))
        created_before = "alice/other" in hub.state.repos
        done = ok(await client.call_tool("traces_push", {"repo": "alice/other", "public": True,
                                                         "approval_token": quote["decision"]["approval_token"]}))
        return quote, created_before, done

    quote, created_before, done = session(flow)  # a client without elicitation: the two-step token
    assert quote["status"] == "approval_required" and not created_before
    assert done["status"] == "pushed" and done["pushed"] == 10 and done["decision"]["via"] == "token"
    assert hub.state.repos["alice/other"]["private"] is False


def test_clear_errors(hub, home, tmp_path, monkeypatch):
    with pytest.raises(TraceError, match="is not a dataset repo id"):
        push_sessions(None, "no-namespace")
    monkeypatch.setenv("HOME", str(tmp_path / "empty"))
    with pytest.raises(TraceError, match="No agent session folders were found in the default places"):
        push_sessions(None, REPO_ID)
    hub.state.fail[("GET", rf"/api/datasets/{REPO_ID}")] = 401
    with pytest.raises(TunepackError, match="token was rejected"):
        push_sessions([str(home / ".hermes/sessions")], REPO_ID)
    assert Counter(r.method for r in hub.requests()) == {"GET": 1}
