"""Protocol errors as the MCP spec (2025-11-25) and JSON-RPC 2.0 name them, where the SDK (``mcp`` 2.3) answers
otherwise. Each piece says what the SDK does and is installed by ``boundary.TunepackServer``:

- ``AnsweringReader``: the SDK's stdio reader (mcp/server/stdio.py) turns a line that is not JSON, or not a JSON-RPC
  message, into an ``Exception`` item that the dispatcher only logs at debug level — the client gets no answer and
  waits forever. This wrapper answers -32700 Parse error / -32600 Invalid Request with ``id: null``.
- ``EnvelopeErrors``: the SDK's streamable-HTTP transport (handshake era, mcp/server/streamable_http.py) answers an
  invalid envelope -32602 with the whole pydantic dump as the message; this ASGI layer makes it -32600 in one line,
  and says what to do when a request comes without a session.
- ``protocol_errors`` (server middleware): the SDK's gate before ``initialize`` says only "Invalid request
  parameters"; malformed params say the same without naming the field; an exception a handler raises goes out with
  JSON-RPC code 0 (jsonrpc_dispatcher.py pins it "for v1 compat"). Here they name the problem and the fix, and a
  crash is -32603 Internal error.
- ``refuse_cursor``: the SDK's list handlers ignore ``cursor`` and return the whole list; we never hand out a
  ``nextCursor``, so every cursor is unknown: -32602.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    PaginatedRequestParams,
)
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("tunepack.server")

SDK_GATE_MESSAGE = "Invalid request parameters"  # the SDK's words for both the init gate and malformed params
_SHOWN = 80  # characters of a client-supplied value quoted back (a cursor, a name)
_BODY_CAP = 1 << 16  # bytes of an HTTP body kept to describe what is wrong with it
_EXAMPLE = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
_FIX = f"Fix: send one JSON-RPC 2.0 object per message, e.g. {_EXAMPLE} (a notification has no \"id\")."


def quoted(value: object) -> str:
    """A client-supplied value quoted back on one line, cut to its start."""
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}…[{len(text)} characters]"


def envelope_problem(value: Any) -> str:
    """What makes ``value`` (decoded JSON) not a JSON-RPC 2.0 request, notification or response, in a few words."""
    if isinstance(value, list):
        return "the message is a JSON array: batches are not part of MCP"
    if not isinstance(value, dict):
        kind = {str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")
        return f"the message is a JSON {kind}, not an object"
    if value.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "method" not in value:
        if "result" in value or "error" in value:
            return 'a response needs an "id" that is a string or an integer, and one of "result" or "error"'
        return 'it has no "method"'
    if not isinstance(value["method"], str):
        return '"method" must be a string'
    if "params" in value and not isinstance(value["params"], dict):
        return '"params" must be an object'
    if "id" in value and (isinstance(value["id"], bool) or not isinstance(value["id"], int | str)):
        return '"id" must be a string or an integer'
    return "it does not match the JSON-RPC 2.0 message shapes"


def invalid_request(problem: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=None,
                        error=ErrorData(code=INVALID_REQUEST, message=f"Invalid Request: {problem}. {_FIX}"))


def parse_error(detail: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=None,
                        error=ErrorData(code=PARSE_ERROR, message=f"Parse error: not JSON ({detail}). {_FIX}"))


_UNSEEN = object()


def _decoded(errors: list[Any]) -> Any:
    """The decoded message behind a validation failure of the JSON-RPC union: the input of a top-level type error
    or of a missing field (each branch of the union reports its own)."""
    for err in errors:
        if len(err["loc"]) == 1 or (err["type"] == "missing" and len(err["loc"]) == 2):
            return err["input"]
    return _UNSEEN


def stream_error(exc: Exception) -> JSONRPCError | None:
    """The answer owed for a frame the stdio reader could not turn into a message (``None``: none is owed — a
    blank line, or an exception that is not about the frame)."""
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    if errors and errors[0]["type"] == "json_invalid":
        raw = errors[0].get("input")
        if isinstance(raw, str | bytes) and not raw.strip():
            return None
        return parse_error(str(errors[0].get("ctx", {}).get("error", "invalid JSON")))
    value = _decoded(errors)
    return invalid_request("it is not a JSON-RPC 2.0 message" if value is _UNSEEN else envelope_problem(value))


class AnsweringReader:
    """The stdio read stream with the answers the SDK leaves out: each unparsable frame is answered on
    ``write`` (see ``stream_error``) instead of reaching the dispatcher, which would drop it in silence."""

    def __init__(self, inner: Any, write: Any):
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            answer = stream_error(item) if isinstance(item, Exception) else None
            if answer is None:
                return item
            log.info("answered an invalid stdio frame: %s", answer.error.message[:120])
            await self._write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReader:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# --- requests the SDK dispatched: middleware and handlers ------------------------------------------

def not_initialized(method: str) -> MCPError:
    """The SDK's pre-initialize gate, with what to do (same code: clients may key on it)."""
    return MCPError(code=INVALID_PARAMS, data={"method": method},
                    message=f"Not initialized: '{method}' came before initialize. Fix: send initialize first, then "
                            "the notifications/initialized notification; only ping may come before them.")


def invalid_params(method: str, exc: ValidationError) -> MCPError:
    """Malformed params: which fields, never their values."""
    fields = sorted({".".join(str(p) for p in err["loc"]) or "params" for err in exc.errors()})[:6]
    return MCPError(code=INVALID_PARAMS, data={"fields": fields},
                    message=f"Invalid params for '{method}': {', '.join(fields)} did not fit its schema. Fix: send "
                            "the params the MCP schema gives for this method.")


async def protocol_errors(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: the SDK's error answers for a request, each with its problem and fix (module docstring)."""
    try:
        return await call_next(ctx)
    except MCPError as exc:
        if exc.message == SDK_GATE_MESSAGE and exc.code == INVALID_PARAMS and ctx.session.client_params is None:
            raise not_initialized(ctx.method) from None
        raise
    except ValidationError as exc:
        if ctx.request_id is None:
            raise
        raise invalid_params(ctx.method, exc) from None
    except Exception as exc:
        if ctx.request_id is None:
            raise
        log.exception("handler for %r raised", ctx.method)
        raise MCPError(code=INTERNAL_ERROR, message=f"Internal error in '{ctx.method}': {type(exc).__name__}: "
                       f"{str(exc)[:300]}. Fix: this is a tunepack bug, not your input; the server log (stderr) has "
                       "the traceback — report it.") from exc


def refuse_cursor(method: str, params: PaginatedRequestParams | None) -> None:
    """Every list is served whole (no ``nextCursor`` is ever given), so any cursor is one this server never made."""
    cursor = params.cursor if params is not None else None
    if cursor is not None:
        raise MCPError(code=INVALID_PARAMS, data={"cursor": cursor[:_SHOWN]},
                       message=f"Invalid cursor {quoted(cursor)}: this server never returned it (its lists come "
                               f"whole, with no nextCursor). Fix: call {method} without a cursor.")


# --- HTTP -------------------------------------------------------------------------------------------

def _rewritten(body: bytes, request: bytes) -> bytes | None:
    """The SDK's 400 answers we replace (see the module docstring), or ``None`` to leave ``body`` as it is."""
    try:
        answer = json.loads(body)
        error = answer["error"]
    except (ValueError, KeyError, TypeError):
        return None
    message = str(error.get("message", ""))
    if error.get("code") == INVALID_PARAMS and message.startswith("Validation error"):
        try:
            problem = envelope_problem(json.loads(request))
        except (ValueError, RecursionError):  # a body over _BODY_CAP (cut) or otherwise undecodable
            problem = "it is not a JSON-RPC 2.0 message"
        reply = invalid_request(problem)
    elif error.get("code") == INVALID_REQUEST and message == "Bad Request: Missing session ID":
        reply = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
            code=INVALID_REQUEST, message="Bad Request: Missing session ID. Fix: send initialize first (without an "
            "Mcp-Session-Id header), then send the Mcp-Session-Id header its answer carries on every later request."))
    else:
        return None
    return reply.model_dump_json(by_alias=True, exclude_unset=True).encode()


def reworded(send: Send, status: int, reword: Callable[[bytes], bytes | None]) -> Send:
    """``send`` with each whole answer of ``status`` replaced by ``reword(body)`` (None: kept as it was), its
    content-length set to the new body's."""
    held: list[Message] = []

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status") == status:
            held.append(message)
            return
        if held and message["type"] == "http.response.body":
            start = held.pop()
            new = None if message.get("more_body") else reword(message.get("body", b""))
            if new is not None:
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                start = {**start, "headers": [*headers, (b"content-length", str(len(new)).encode())]}
                message = {**message, "body": new}
            await send(start)
        await send(message)

    return sending


class EnvelopeErrors:
    """ASGI middleware over the streamable-HTTP app: a 400 answer from the SDK that we word better (``_rewritten``)
    is replaced; everything else passes through untouched (the request body is only copied, up to 64 KiB)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()

        async def copying() -> Message:
            message = await receive()
            if message["type"] == "http.request" and len(body) < _BODY_CAP:
                body.extend(message.get("body", b"")[:_BODY_CAP - len(body)])
            return message

        await self.app(scope, copying, reworded(send, 400, lambda sent: _rewritten(sent, bytes(body))))
