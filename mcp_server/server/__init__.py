"""The MCP face of tunepack: typed tools that only adapt the rooms (see pipeline_tools, other_tools).

Start it with ``tunepack serve`` (stdio) or ``tunepack serve --http`` (streamable HTTP on
127.0.0.1). Nothing heavy is imported at start-up: torch, transformers, trl, datasets and trackio
load only inside the tools (or jobs) that need them.
"""

from mcp.server import MCPServer

from .. import __version__

INSTRUCTIONS = """tunepack post-trains small language models (QLoRA SFT with TRL + PEFT).
Order of work: skills_list/skills_read (how-to) → data_inspect / viewer_traces → pipeline_validate →
pipeline_preflight (wait for its job) → pipeline_run → jobs_wait → tracking_summary / tracking_plot →
registry_list → eval_start → jobs_wait → eval_results → registry_publish (with the human's yes).
Several runs of one config: sweep_plan → sweep_submit (canary first) → sweep_status → sweep_select → sweep_report.
Every tool returns within 20 s; long work runs as a job you follow with jobs_wait (≤ 50 s per call).
Paid flavors and publishing need a human yes: elicitation, or a quote with an approval_token to pass back
after the human agrees. When a step fails for a reason no skill warned about, call skills_add_pitfall.
This server exposes the toolsets it was started with (tunepack serve --toolsets …; core by default):
the Viewer endpoints, Trackio writers, ledger_* and research_* (study roles) live in their own toolsets."""


def build_server(toolsets: str | None = "all") -> MCPServer:
    """The server with the tools of ``toolsets`` (comma-separated names, see toolsets.py; default all)."""
    from . import other_tools, pipeline_tools, viewer_tools
    from ..harness.toolsets import parse, tools_of

    server = MCPServer("tunepack", instructions=INSTRUCTIONS, version=__version__)
    pipeline_tools.register(server)
    other_tools.register(server)
    viewer_tools.register(server)
    from . import eval_tools  # code benchmarks in the sandbox

    eval_tools.register(server)
    from . import traces_tools  # agent sessions → SFT rows
    traces_tools.register(server)
    from . import ledger_tools, prompts, research_tools  # experiment ledger, Hub research, chat commands

    ledger_tools.register(server)
    research_tools.register(server)
    prompts.register(server)
    from . import sweep_tools  # sweeps: plan, submit (canary first), status, select, report, cancel
    sweep_tools.register(server)
    keep = tools_of(parse(toolsets))
    for tool in [t.name for t in server._tool_manager.list_tools()]:
        if tool not in keep:
            server.remove_tool(tool)
    return server


def serve(http: bool = False, host: str = "127.0.0.1", port: int = 8765, toolsets: str | None = None) -> None:
    """Serve the ``toolsets`` (default: core, the whole contract)."""
    server = build_server(toolsets or "core")
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run()
