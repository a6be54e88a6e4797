"""The server-wide error boundary around every tool call (the per-tool one is ``common.guarded``): arguments that
do not fit a tool's input schema get an answer that says how to call it, a crash gets a fix like ``guarded``'s,
and an identical call that keeps failing gets the loop advice of ``skills.loops`` (its memory lives in this
process, one per server)."""

from __future__ import annotations

import logging
import re
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from ..skills.loops import LoopGuard

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

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
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
            if message.startswith("Unknown tool"):
                message += ". Fix: call tools/list for the tools this server offers (tunepack serve --toolsets …)."
            raise ToolError(self._with_advice(name, arguments, message)) from cause
        self.loops.succeeded(name)
        return result

    def _with_advice(self, name: str, arguments: dict[str, Any], message: str) -> str:
        message = shortened(message)
        try:
            advice = self.loops.failed(name, arguments, message)
        except Exception:  # the advice is a help; never let it hide the error itself
            log.exception("loop advice for %s failed", name)
            return message
        return f"{message}\n\n{advice}" if advice else message
