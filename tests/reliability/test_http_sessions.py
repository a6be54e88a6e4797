"""``tunepack serve --http`` holds a bounded number of MCP sessions (issue [39], item 4).

Each streamable-HTTP session keeps a server task and its streams (about 39 KB). Before, the server ran with the SDK's
defaults (10,000 sessions, 30 minutes idle): a client that opens sessions and never closes them grew the server by
about 390 MB before anything said no. Now at most ``--max-sessions`` (64 by default) are open at once, a request
that would open one more gets HTTP 503 with a JSON-RPC error naming the cap and the fix, and a session with no
request for ``--idle-timeout`` seconds (1800 by default) is dropped.

Probed against a real ``tunepack serve --http --max-sessions 3 --idle-timeout 2`` on a free loopback port.
"""

from __future__ import annotations

import json
import time

import pytest
from support.common import http_server, mcp_post, run_cli

CAP, IDLE_S = 3, 2.0
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "session-probe", "version": "1"}}}


def post(url: str, body: str, session: str | None = None) -> tuple[int, dict, str]:
    return mcp_post(url, body, session)


@pytest.fixture
def capped():
    with http_server("--max-sessions", str(CAP), "--idle-timeout", str(IDLE_S)) as (url, _):
        yield url


def _open(url: str) -> tuple[int, str | None, str]:
    status, head, text = post(url, json.dumps(INITIALIZE))
    return status, head.get("mcp-session-id"), text


def test_a_session_past_the_cap_is_refused_naming_the_cap_and_an_idle_one_is_dropped(capped):
    sessions = []
    for _ in range(CAP):
        status, session, text = _open(capped)
        assert status == 200 and session, text
        sessions.append(session)
    status, session, text = _open(capped)  # cap + 1
    error = json.loads(text)["error"]
    assert status == 503 and session is None, text
    assert f"at most {CAP} MCP sessions" in error["message"] and "--max-sessions" in error["message"], error
    assert f"no request for {IDLE_S:g} s is dropped" in error["message"], error
    assert error["data"] == {"max_sessions": CAP, "idle_timeout_s": IDLE_S}
    # the sessions already open are unaffected by the refusal
    status, _, text = post(capped, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}), sessions[0])
    assert status == 200 and "result" in json.loads(text), text

    # idle past --idle-timeout: dropped, so there is room again (a refused initialize touches no open session)
    deadline = time.monotonic() + IDLE_S + 30
    while (reopened := _open(capped))[0] == 503 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert reopened[0] == 200 and reopened[1], reopened
    for session in sessions:  # their ids answer 404: the client initializes again
        status, _, text = post(capped, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}), session)
        assert status == 404 and "Session not found" in text, (status, text)
    opened = [_open(capped) for _ in range(CAP - 1)]
    assert all(status == 200 and session for status, session, _ in opened), opened
    assert _open(capped)[0] == 503


def test_the_defaults_and_the_flags():
    from mcp_server.server import build_server
    from mcp_server.server.http_sessions import IDLE_TIMEOUT_S, MAX_SESSIONS

    server = build_server("core")
    server.streamable_http_app()  # as `tunepack serve --http` builds it, without naming limits
    manager = server.session_manager
    assert (manager.max_sessions, manager.session_idle_timeout) == (MAX_SESSIONS, IDLE_TIMEOUT_S) == (64, 1800)
    for args, says in [(["--http", "--max-sessions", "0"], "--max-sessions must be at least 1"),
                       (["--http", "--idle-timeout", "-5"], "--idle-timeout must be a positive number"),
                       (["--max-sessions", "8"], "add --http")]:
        done = run_cli("serve", *args, timeout=60)
        assert done.returncode != 0 and says in done.stderr, done.stderr
