"""What every tool shares: the error boundary, the stdout guard, small argument types, and turning an
approval resolver's outcome into the approval room's ``Consent``."""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import json
import logging
import secrets
import sys
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from ..approval import Asked, Consent
from ..errors import InputError, TunepackError

log = logging.getLogger("tunepack.server")

ConfigPath = Annotated[str, Field(description="Path of a tunepack YAML config (e.g. examples/demo.yaml).")]
Backend = Annotated[str, Field(description="Job backend: 'local' (this machine, free) or 'hf' (HF Jobs).")]
OptBackend = Annotated[str | None, Field(description="Job backend: 'local' (this machine, free) or 'hf' (HF Jobs); "
                                                     "empty = the config's job.backend, else local.")]
Flavor = Annotated[str | None, Field(description="Hardware flavor (see jobs_hardware); empty = the backend's "
                                                 "default.")]
TimeoutS = Annotated[int | None, Field(description="Kill the job after this many seconds (required on paid "
                                                   "flavors: it bounds the worst case).", ge=1)]
ApprovalToken = Annotated[str | None, Field(description="Only after a human approved a quote: its token.")]
Force = Annotated[bool, Field(description="Allow a remote training timeout under 30 minutes (smoke jobs only).")]
JobId = Annotated[str, Field(description="A job id returned by a submit/run/preflight tool or jobs_list.")]
Project = Annotated[str, Field(description="Trackio project name.")]


class Approval(BaseModel):
    approve: bool = Field(description="Approve?")


class ServerMode:
    """How this server process was started: ``custodian`` = ``tunepack serve --http --custodian`` (a token
    approves only after ``tunepack approve`` under the custodian account)."""

    custodian = False
    served: tuple[str, ...] = ("core",)  # the toolsets build_server registered


_PROCESS = "session-" + secrets.token_hex(8)


def session_key(ctx: Context | None) -> str:
    """A name for the MCP session of this call: approval tokens are good only in the session that was quoted.
    Over stdio the server process serves one client, so the process is the session; over HTTP the transport's
    session id. Stateless HTTP (protocol 2026-07-28) has no session at all: there a token is bound to nothing
    but its action (README, Security)."""
    if ctx is None:
        return ""
    if ctx.request_context.request is None:  # stdio: no HTTP request behind the call
        return _PROCESS
    # the SDK makes a ServerSession per request; the connection behind it lives as long as the client's session
    # (mcp 2.x keeps it private: ``ServerSession._connection``)
    connection = getattr(ctx.session, "_connection", None)
    session_id = getattr(connection, "session_id", None)
    return f"session-{session_id}" if session_id else "stateless-http"


def consent_from(outcome, approval_token: str | None = None, ctx: Context | None = None) -> Consent:
    """The human's consent from an approval resolver's outcome: their answer when they were asked (a declined
    or cancelled question is a no), nothing when the resolver asked nobody (it returned None), plus the
    approval token the agent passed back and where the call came from (can its client elicit, its session)."""
    if outcome is None:
        answer = None
    elif isinstance(outcome, AcceptedElicitation):
        answer = outcome.data.approve if isinstance(outcome.data, Approval) else None
    else:
        answer = False
    asked = Asked(can_elicit=ctx is not None and can_elicit(ctx), session=session_key(ctx),
                  custodian=ServerMode.custodian)
    return Consent(elicited=answer, token=approval_token, asked=asked)


def can_elicit(ctx: Context) -> bool:
    caps = ctx.client_capabilities
    return caps is not None and caps.elicitation is not None


def _unusable_argument(exc: BaseException) -> TunepackError | None:
    """The OS refusing an argument itself as a file name (a NUL byte, a name too long): the caller's to fix."""
    if isinstance(exc, ValueError) and "null byte" in str(exc):
        reason = "it contains a NUL byte"
    elif isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        reason = "it is longer than a file name can be"
    else:
        return None
    return InputError(f"An argument cannot be used as a path or name: {reason}.",
                      "pass a real path or name (no \\x00; each part of a path at most 255 bytes).")


def _fail(name: str, exc: BaseException) -> ToolError:
    exc = _unusable_argument(exc) or exc
    if isinstance(exc, TunepackError):
        return ToolError(" ".join(str(exc).split()))
    log.exception("tool %s crashed", name)
    return ToolError(f"Internal error in {name}: {type(exc).__name__}: {exc}. Fix: this is a tunepack bug, not "
                     "your input; the server log (stderr) has the traceback — report it, and try the equivalent "
                     "`tunepack` CLI command meanwhile.")


def _failed_checks(report) -> str:
    failed = [c for c in report.checks if c.status == "fail"]
    return "; ".join(f"{c.name}: {c.detail}" + (f" ({c.fix})" if c.fix else "") for c in failed[:4])


# Results that report, as data, that the call did not do what it was asked: (result) -> one line saying so, or None.
# The tool then answers isError with that line and the whole result in its text, and the result as structured content.
FAILURES: dict[str, Callable[[Any], str | None]] = {
    "pipeline_preflight": lambda r: None if r.ok or r.approval else f"Preflight did not pass: {_failed_checks(r)}.",
    "sweep_plan": lambda r: None if r.total_runs or not r.runs else (
        f"The sweep plan refuses all {len(r.runs)} runs: " + "; ".join(
            f"{run.id} {run.changes}: {run.refused}" for run in r.runs[:3] if run.refused) + "."),
    "sweep_select": lambda r: None if r.best is not None else (
        f"No run of sweep {r.sweep_id} could be ranked on {r.metric.get('name')} (status {r.sweep_status})."),
    "jobs_wait": lambda r: f"Job {r.job.id} ended {r.job.stage}: {r.error}" if r.job.stage in ("ERROR", "CANCELED")
    else None,
    "eval_results": lambda r: f"The eval stopped before {', '.join(r.missing)} finished: {r.error}" if r.partial
    else None,
}


def _result(name: str, result: Any) -> Any:
    """The tool's result, or an isError result where it says the call did not do what was asked."""
    rule = FAILURES.get(name)
    failure = rule(result) if rule is not None and isinstance(result, BaseModel) else None
    if not failure:
        return result
    data = result.model_dump(mode="json")
    fix = data.get("next_step") or "read the result below: it says what was done and what was not."
    said = f"{failure} Fix: {fix}" if " Fix: " not in failure else failure  # the failure already names its fix
    text = f"{said}\n\n" + json.dumps(data, indent=1, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=True)


def guarded(fn):
    """Run a tool with stdout sent to stderr (stdout may be the protocol) and every failure turned
    into one error result that says what to do next (a result that reports a failure as data included)."""
    name = fn.__name__
    fn.__doc__ = inspect.cleandoc(fn.__doc__ or "")  # tool descriptions without source indentation
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_wrapper(*args, **kwargs):
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    return _result(name, await fn(*args, **kwargs))
            except ToolError:
                raise
            except Exception as exc:
                raise _fail(name, exc) from None
        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with contextlib.redirect_stdout(sys.stderr):
                return _result(name, fn(*args, **kwargs))
        except ToolError:
            raise
        except Exception as exc:
            raise _fail(name, exc) from None
    return wrapper
