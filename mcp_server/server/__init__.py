"""The MCP face of tunepack: typed tools that only adapt the rooms, one module per room, each with its
``TOOLS`` list; ``build_server`` registers the tools of the chosen toolsets from those lists.

Start it with ``tunepack serve`` (stdio) or ``tunepack serve --http`` (streamable HTTP on
127.0.0.1). Nothing heavy is imported at start-up: torch, transformers, trl, datasets and trackio
load only inside the tools (or jobs) that need them.
"""

from .. import __version__
from .boundary import TunepackServer
from .http_sessions import IDLE_TIMEOUT_S, MAX_SESSIONS, SessionLimits, check

INSTRUCTIONS = """tunepack post-trains small language models (QLoRA SFT with TRL + PEFT).
Order of work: skills_list/skills_read (how-to) → data_inspect / viewer_traces → pipeline_validate →
pipeline_preflight (wait for its job) → pipeline_run → jobs_wait → tracking_summary / tracking_plot →
registry_list → eval_start → jobs_wait → eval_results → registry_publish (with the human's yes).
Several runs of one config: sweep_plan → sweep_submit (canary first) → sweep_status → sweep_select → sweep_report.
Scores into a README: results_readme. A request to SFT, sweep, track, evaluate and report is the prompt
tunepack-contract (prompts/get) and skill tunepack-pipeline, "The whole contract": follow it.
Every tool returns within 20 s; long work runs as a job you follow with jobs_wait
(it holds a call until the job ends or 240 s pass; timeout_s up to 600).
Paid flavors and publishing need a human yes: elicitation, or a quote with an approval_token to pass back
after the human agrees. When a step fails for a reason no skill warned about, call skills_add_pitfall.
This server exposes the toolsets it was started with (tunepack serve --toolsets …; core by default):
the Viewer endpoints, Trackio writers, ledger_* and research_* (study roles) live in their own toolsets."""


def all_tools() -> list:
    """Every tool function, from each room's face module."""
    from . import (
        data_tools,
        eval_tools,
        job_tools,
        ledger_tools,
        loop_tools,
        pipeline_tools,
        registry_tools,
        report_tools,
        research_tools,
        skill_tools,
        sweep_tools,
        traces_tools,
        tracking_tools,
        viewer_tools,
    )

    modules = (pipeline_tools, job_tools, tracking_tools, registry_tools, skill_tools, data_tools, viewer_tools,
               eval_tools, traces_tools, ledger_tools, research_tools, sweep_tools, report_tools, loop_tools)
    return [tool for module in modules for tool in module.TOOLS]


def build_server(toolsets: str | None = "all") -> TunepackServer:
    """The server with the tools of ``toolsets`` (comma-separated names, see harness/toolsets.py; default all)
    and the chat commands as prompts."""
    from ..harness.toolsets import parse, tools_of
    from . import prompts
    from .common import ServerMode

    server = TunepackServer("tunepack", instructions=INSTRUCTIONS, version=__version__)
    ServerMode.served = parse(toolsets)
    keep = tools_of(ServerMode.served)
    for tool in all_tools():
        if tool.__name__ in keep:
            server.add_tool(tool)
    prompts.register(server)
    return server


def serve(http: bool = False, host: str = "127.0.0.1", port: int = 8765, toolsets: str | None = None,
          max_sessions: int = MAX_SESSIONS, idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
    """Serve the ``toolsets`` (default: core, the whole contract). Over HTTP at most ``max_sessions`` MCP sessions
    are open at once, and one with no request for ``idle_timeout_s`` is dropped (``http_sessions``)."""
    server = build_server(toolsets or "core")
    if http:
        limits = check(SessionLimits(max_sessions, idle_timeout_s))
        server.run("streamable-http", host=host, port=port, max_sessions=limits.max_sessions,
                   session_idle_timeout=limits.idle_timeout_s)
    else:
        server.run()
