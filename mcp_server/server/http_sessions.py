"""How many MCP sessions ``tunepack serve --http`` holds, and for how long.

Each streamable-HTTP session keeps a server task and its streams (about 39 KB) until the client ends it. The SDK's
session manager (mcp/server/streamable_http_manager.py) can cap them and drop idle ones, but its defaults (10,000
sessions, 30 minutes) let a client that opens sessions and never closes them take about 390 MB. tunepack serves at
most ``MAX_SESSIONS`` at once (``--max-sessions``) and drops one after ``IDLE_TIMEOUT_S`` without a request in
flight (``--idle-timeout``): its id then answers 404 and the client initializes again.

A request that would open a session past the cap gets the SDK's HTTP 503; ``SessionCap`` words its JSON-RPC error
so that it names the cap and the fix (the SDK says only "Too many open sessions").
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mcp_types import ErrorData, JSONRPCError
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import InputError
from .protocol import reworded

MAX_SESSIONS = 64
IDLE_TIMEOUT_S = 30 * 60
_SDK_MESSAGE = "Too many open sessions"
FIX = "pass --max-sessions N with N >= 1 and --idle-timeout SECONDS above 0 (defaults: 64 and 1800)."


@dataclass(frozen=True)
class SessionLimits:
    max_sessions: int = MAX_SESSIONS
    idle_timeout_s: float | None = IDLE_TIMEOUT_S  # None: sessions live until the client ends them

    def refusal(self) -> str:
        wait = (f"or wait: a session with no request for {self.idle_timeout_s:g} s is dropped; "
                if self.idle_timeout_s else "")
        return (f"{_SDK_MESSAGE}: this server holds at most {self.max_sessions} MCP sessions at once and all "
                f"{self.max_sessions} are open. Fix: end the sessions you no longer use (quit those clients; an MCP "
                f"client ends its session with an HTTP DELETE), {wait}or restart the server with a higher cap "
                f"(`tunepack serve --http --max-sessions N`).")


def check(limits: SessionLimits) -> SessionLimits:
    """The limits, or InputError naming the flag that is out of range."""
    idle = limits.idle_timeout_s
    if limits.max_sessions < 1:
        raise InputError(f"--max-sessions must be at least 1, got {limits.max_sessions}.", FIX)
    if idle is not None and not (0 < idle < float("inf")):
        raise InputError(f"--idle-timeout must be a positive number of seconds, got {idle:g}.", FIX)
    return limits


def _reworded(body: bytes, limits: SessionLimits) -> bytes | None:
    try:
        answer = json.loads(body)
        error = answer["error"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(error, dict) or error.get("message") != _SDK_MESSAGE:
        return None
    reply = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
        code=error.get("code", -32603), message=limits.refusal(),
        data={"max_sessions": limits.max_sessions, "idle_timeout_s": limits.idle_timeout_s}))
    return reply.model_dump_json(by_alias=True, exclude_unset=True).encode()


class SessionCap:
    """ASGI middleware: the SDK's 503 for a session past the cap, worded with the cap and the fix; everything else
    passes through untouched."""

    def __init__(self, app: ASGIApp, limits: SessionLimits):
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, reworded(send, 503, lambda body: _reworded(body, self.limits)))


__all__ = ["IDLE_TIMEOUT_S", "MAX_SESSIONS", "SessionCap", "SessionLimits", "check"]
