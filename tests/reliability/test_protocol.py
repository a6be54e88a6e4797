"""Protocol errors as the MCP spec and JSON-RPC 2.0 name them, probed with raw JSON-RPC over the real transports:
``tunepack serve`` over stdio (one line per message) and ``tunepack serve --http`` (streamable HTTP on a free
loopback port). Where the SDK answers otherwise, mcp_server/server/protocol.py says what it does.

- an unknown prompt or a missing prompt argument, an unknown tool, an unknown cursor: -32602 Invalid params;
- a stdio line that is not JSON: -32700; a JSON value that is not a JSON-RPC message: -32600; both with ``id: null``;
- over HTTP, an invalid envelope: -32600 in one line (no validation dump);
- a request before ``initialize`` says to send ``initialize`` first.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time

import pytest
from support.common import REPO, http_server, mcp_post

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "protocol-probe", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ANSWER_S = 30.0  # a deadline for an answer that never comes (the server answers in milliseconds)
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


class StdioProbe:
    """A `tunepack serve` process spoken to line by line; it sends one request before initializing, as a client
    that skips the handshake would, and keeps that answer."""

    def __init__(self, log_path):
        self.log = open(log_path, "w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve"], cwd=REPO,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env=os.environ.copy())
        self.before_init = self.ask({"jsonrpc": "2.0", "id": "early", "method": "tools/list"})
        assert "result" in self.ask(INITIALIZE)
        self.send(INITIALIZED)

    def send(self, message) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict | None:
        """The next response (server notifications skipped), or None when none comes by the deadline."""
        deadline = time.monotonic() + ANSWER_S
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([self.proc.stdout], [], [], left)[0]:
                break
            line = self.proc.stdout.readline()
            assert line, f"the server exited: {self.stderr()[-2000:]}"
            message = json.loads(line)
            if "method" not in message:
                return message
        return None

    def ask(self, message) -> dict | None:
        self.send(message)
        return self.answer()

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def close(self) -> str:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.stderr()


@pytest.fixture(scope="module")
def stdio(tmp_path_factory):
    probe = StdioProbe(tmp_path_factory.mktemp("protocol") / "stderr.log")
    yield probe
    assert "Traceback" not in probe.close(), probe.stderr()[-3000:]


def error_of(answer: dict | None, code: int) -> str:
    """The error message of ``answer``, checked to be the error ``code`` in one line with a fix."""
    assert answer is not None, "no answer came"
    assert "result" not in answer and answer["error"]["code"] == code, answer
    message = answer["error"]["message"]
    assert "\n" not in message and len(message) < 600 and "pydantic" not in message, message
    return message


# --- stdio: frames that are not messages -----------------------------------------------------------

NOT_MESSAGES = {
    "not JSON": ("{not json", PARSE_ERROR, "not JSON"),
    "cut short": ('{"jsonrpc": "2.0", "id": 1, "method": "tools/li', PARSE_ERROR, "not JSON"),
    "no method": ('{"jsonrpc": "2.0", "id": 5}', INVALID_REQUEST, 'no "method"'),
    "no method, no id": ('{"jsonrpc": "2.0"}', INVALID_REQUEST, 'no "method"'),
    "a batch": ('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', INVALID_REQUEST, "batches"),
    "a number": ("42", INVALID_REQUEST, "JSON number"),
    "JSON-RPC 1.0": ('{"jsonrpc": "1.0", "id": 2, "method": "ping"}', INVALID_REQUEST, '"jsonrpc" must be "2.0"'),
    "params not an object": ('{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1]}', INVALID_REQUEST,
                             '"params" must be an object'),
    "method not a string": ('{"jsonrpc": "2.0", "id": 4, "method": 7}', INVALID_REQUEST, '"method" must be a string'),
}


@pytest.mark.parametrize("case", NOT_MESSAGES)
def test_a_stdio_frame_that_is_not_a_message_is_answered_with_a_null_id(stdio, case):
    line, code, says = NOT_MESSAGES[case]
    answer = stdio.ask(line)
    message = error_of(answer, code)
    assert answer["id"] is None and says in message and "Fix:" in message
    assert stdio.ask({"jsonrpc": "2.0", "id": "after", "method": "ping"}) == {"jsonrpc": "2.0", "id": "after",
                                                                             "result": {}}


def test_a_blank_stdio_line_is_no_message_but_the_bad_line_after_it_is_answered(stdio):
    stdio.send("")
    stdio.send("   ")
    assert error_of(stdio.ask("{"), PARSE_ERROR)  # the first answer is this line's: the blank ones got none
    assert stdio.ask({"jsonrpc": "2.0", "id": "next", "method": "ping"})["id"] == "next"


# --- requests the spec answers with -32602 --------------------------------------------------------

def test_an_unknown_prompt_or_a_missing_prompt_argument_is_invalid_params(stdio):
    unknown = stdio.ask({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "no-such-prompt"}})
    assert "no-such-prompt" in error_of(unknown, INVALID_PARAMS) and "prompts/list" in unknown["error"]["message"]
    missing = stdio.ask({"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
                         "params": {"name": "tunepack-contract", "arguments": {"model": "Qwen/Qwen3-0.6B"}}})
    assert "dataset" in error_of(missing, INVALID_PARAMS) and missing["error"]["data"] == {"missing": ["dataset"]}
    fine = stdio.ask({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
                      "params": {"name": "tunepack-contract", "arguments": {"model": "m", "dataset": "d"}}})
    assert fine["result"]["messages"]


def test_an_unknown_tool_is_a_protocol_error_not_a_tool_result(stdio):
    answer = stdio.ask({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                        "params": {"name": "no_such_tool", "arguments": {}}})
    message = error_of(answer, INVALID_PARAMS)
    assert message.startswith("Unknown tool: 'no_such_tool'") and "tools/list" in message


@pytest.mark.parametrize("method", ["tools/list", "prompts/list", "resources/list", "resources/templates/list"])
def test_an_unknown_cursor_is_invalid_params(stdio, method):
    answer = stdio.ask({"jsonrpc": "2.0", "id": 5, "method": method, "params": {"cursor": "not-a-cursor"}})
    assert "not-a-cursor" in error_of(answer, INVALID_PARAMS) and f"call {method} without a cursor" in \
        answer["error"]["message"]
    assert "result" in stdio.ask({"jsonrpc": "2.0", "id": 6, "method": method})


def test_the_sdk_client_gets_the_same_errors_on_a_2026_connection():
    """The real client in ``auto`` mode opens a 2026-07-28 connection (no handshake): the same handlers answer."""
    from mcp.shared.exceptions import MCPError
    from test_server import session

    async def flow(client):
        codes = []
        for call in (lambda: client.call_tool("no_such_tool", {}),
                     lambda: client.get_prompt("tunepack-contract", {"model": "m"}),
                     lambda: client.list_tools(cursor="not-a-cursor")):
            with pytest.raises(MCPError) as refused:
                await call()
            codes.append(refused.value.code)
        return codes

    assert session(flow, mode="auto") == [INVALID_PARAMS] * 3


def test_a_request_before_initialize_says_to_send_initialize_first(stdio):
    message = error_of(stdio.before_init, INVALID_PARAMS)
    assert stdio.before_init["id"] == "early"
    assert "before initialize" in message and "send initialize first" in message


def test_malformed_params_name_the_field_not_the_value(stdio):
    answer = stdio.ask({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": ["secret-value"]}})
    message = error_of(answer, INVALID_PARAMS)
    assert "params.name" in message and "secret-value" not in json.dumps(answer)


# --- HTTP ---------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http():
    with http_server() as (url, _):
        yield url


def post(url: str, body: str, session: str | None = None) -> tuple[int, dict, str]:
    return mcp_post(url, body, session, timeout=ANSWER_S)


def test_over_http_an_invalid_envelope_is_invalid_request_in_one_line(http):
    for body, says in [('{"jsonrpc": "2.0", "id": 5}', 'no "method"'), ("[1]", "batches"),
                       ('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"}', '"params" must be an object')]:
        status, _, text = post(http, body)
        answer = json.loads(text)
        assert status == 400 and answer["id"] is None and says in error_of(answer, INVALID_REQUEST), text
    status, head, text = post(http, json.dumps(INITIALIZE))
    assert status == 200 and "result" in json.loads(text)
    session = head["mcp-session-id"]
    status, _, text = post(http, '{"jsonrpc": "2.0", "id": 9}', session)
    assert status == 400 and 'no "method"' in error_of(json.loads(text), INVALID_REQUEST)
    post(http, json.dumps(INITIALIZED), session)
    status, _, text = post(http, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                             "params": {"name": "no_such_tool", "arguments": {}}}), session)
    assert status == 200 and error_of(json.loads(text), INVALID_PARAMS).startswith("Unknown tool")


def test_over_http_a_request_without_a_session_says_to_initialize_first(http):
    status, _, text = post(http, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    assert status == 400 and "send initialize first" in error_of(json.loads(text), INVALID_REQUEST)


# --- the pieces, without a server ------------------------------------------------------------------

def test_envelope_problems_and_stream_errors_name_what_is_wrong():
    import mcp_types
    from pydantic import ValidationError

    from mcp_server.server.protocol import envelope_problem, stream_error

    assert envelope_problem({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}) == '"id" must be a string or an integer'
    assert "response" in envelope_problem({"jsonrpc": "2.0", "result": {}})
    assert envelope_problem(None) == "the message is a JSON null, not an object"
    assert stream_error(RuntimeError("the pipe broke")) is None  # not about a frame: passed on as before
    with pytest.raises(ValidationError) as blank:
        mcp_types.jsonrpc_message_adapter.validate_json(" \r", by_name=False)
    assert stream_error(blank.value) is None  # a blank line: nothing was sent
