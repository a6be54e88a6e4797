"""The server-wide error boundary around every tool call (the per-tool one is ``common.guarded``): arguments that
do not fit a tool's input schema get an answer that says how to call it, a crash gets a fix like ``guarded``'s,
and an identical call that keeps failing gets the loop advice of ``skills.loops`` (its memory lives in this
process, one per server).

Around every other message, the protocol errors the MCP spec names where the SDK answers otherwise (``protocol.py``
says what the SDK does in each case): an unknown tool or prompt, a missing prompt argument and an unknown cursor are
-32602 Invalid params; an unparsable stdio line or HTTP body is -32700 / -32600 with ``id: null``."""

from __future__ import annotations

import logging
import re
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError

from ..skills.loops import LoopGuard
from . import http_sessions, protocol
from .prompts import refusal
from .schemas import compact_input, compact_output

log = logging.getLogger("tunepack.server")
_JSON_TYPES = {"NoneType": "null", "bool": "boolean", "int": "integer", "float": "number", "str": "string",
               "list": "array", "dict": "object"}
_SHOWN_ERRORS = 6
_LONG = re.compile(r"\S{241,}")
MAX_ERROR_CHARS = 3000


def shortened(message: str) -> str:
    """An error as the agent reads it: a long value it passed (a 1 MB path) quoted by its start only, and the
    whole at most ``MAX_ERROR_CHARS`` with its fix kept."""
    message = _LONG.sub(lambda m: f"{m[0][:120]}…[{len(m[0])} characters]", message)
    if len(message) <= MAX_ERROR_CHARS:
        return message
    cut = message.rfind(" Fix: ")
    fix = message[cut:][:MAX_ERROR_CHARS // 2] if cut >= 0 else ""
    return message[:MAX_ERROR_CHARS - len(fix)] + "…" + fix


def argument_error(tool: str, exc: ValidationError) -> str:
    """One line per bad argument — its name, what was wrong, the JSON type received (never the value: it may be
    huge or secret) — and how to call the tool instead."""
    parts = []
    for err in exc.errors()[:_SHOWN_ERRORS]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = "" if err["type"] == "missing" else f" (got {_JSON_TYPES.get(type(err['input']).__name__, 'a value')})"
        parts.append(f"'{where}': {err['msg']}{got}")
    more = len(exc.errors()) - _SHOWN_ERRORS
    listed = "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
    return (f"Error executing tool {tool}: invalid arguments — {listed}. Fix: call {tool} again with arguments that "
            "match its input schema (tools/list gives each argument's type, limits and which are required).")


class TunepackServer(MCPServer):
    """MCPServer with tunepack's boundary around every call (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.loops = LoopGuard()
        self.middleware.append(protocol.protocol_errors)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._tool_manager.get_tool(name) is None:
            # The SDK answers an unknown tool as a tool result (isError); the spec's tools/call example makes it a
            # protocol error, -32602.
            message = (f"Unknown tool: {protocol.quoted(name)}. Fix: call tools/list for the tools this server "
                       "offers (tunepack serve --toolsets …).")
            raise MCPError(code=INVALID_PARAMS, message=self._with_advice(name, arguments, message),
                           data={"name": name[:80]})
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            message = (f"{exc}: an internal error. Fix: this is a tunepack bug, not your input; the server log "
                       "(stderr) has the traceback — report it, and try the equivalent `tunepack` CLI command "
                       "meanwhile.")
            raise UnexpectedToolError(self._with_advice(name, arguments, message)) from exc.__cause__
        except ToolError as exc:
            cause = exc.__cause__
            message = argument_error(name, cause) if isinstance(cause, ValidationError) else str(exc)
            raise ToolError(self._with_advice(name, arguments, message)) from cause
        self.loops.succeeded(name)
        return result

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        # The SDK raises ValueError for both, which goes out as JSON-RPC code 0; the spec says -32602.
        problem = refusal(self._prompt_manager.get_prompt(name), name, arguments)
        if problem is not None:
            raise problem
        return await super().get_prompt(name, arguments, context)

    # The SDK's list handlers ignore the cursor and return everything; an unknown cursor is -32602 by the spec.
    async def _handle_list_tools(self, ctx: Any, params: Any) -> Any:
        protocol.refuse_cursor("tools/list", params)
        listed = await super()._handle_list_tools(ctx, params)
        tools = [tool.model_copy(update={"input_schema": compact_input(tool.input_schema),
                                         "output_schema": compact_output(tool.output_schema)})
                 for tool in listed.tools]  # the schemas as the agent's context carries them (schemas.py)
        return listed.model_copy(update={"tools": tools})

    async def _handle_list_prompts(self, ctx: Any, params: Any) -> Any:
        protocol.refuse_cursor("prompts/list", params)
        return await super()._handle_list_prompts(ctx, params)

    async def _handle_list_resources(self, ctx: Any, params: Any) -> Any:
        protocol.refuse_cursor("resources/list", params)
        return await super()._handle_list_resources(ctx, params)

    async def _handle_list_resource_templates(self, ctx: Any, params: Any) -> Any:
        protocol.refuse_cursor("resources/templates/list", params)
        return await super()._handle_list_resource_templates(ctx, params)

    async def run_stdio_async(self) -> None:
        """As the SDK's, with the stdio read stream answering the frames the SDK drops (``protocol.AnsweringReader``)."""
        async with stdio_server() as (read_stream, write_stream):
            await self._lowlevel_server.run(protocol.AnsweringReader(read_stream, write_stream), write_stream,
                                            self._lowlevel_server.create_initialization_options())

    def streamable_http_app(self, **kwargs: Any) -> Any:
        """As the SDK's, with ``protocol.EnvelopeErrors`` in front (an invalid envelope: -32600 in one line), and
        tunepack's session cap and idle timeout (``http_sessions``) unless the caller names its own."""
        kwargs.setdefault("max_sessions", http_sessions.MAX_SESSIONS)
        kwargs.setdefault("session_idle_timeout", http_sessions.IDLE_TIMEOUT_S)
        app = super().streamable_http_app(**kwargs)
        app.add_middleware(protocol.EnvelopeErrors)
        if kwargs["max_sessions"] is not None and not kwargs.get("stateless_http"):
            app.add_middleware(http_sessions.SessionCap, limits=http_sessions.SessionLimits(
                kwargs["max_sessions"], kwargs["session_idle_timeout"]))
        return app

    def _with_advice(self, name: str, arguments: dict[str, Any], message: str) -> str:
        message = shortened(message)
        try:
            advice = self.loops.failed(name, arguments, message)
        except Exception:  # the advice is a help; never let it hide the error itself
            log.exception("loop advice for %s failed", name)
            return message
        return f"{message}\n\n{advice}" if advice else message
