"""tunepack: post-train small language models end to end from a coding agent.

The package is a set of rooms, one per capability (config, train, jobs, viewer, tracking, registry,
evals, traces, skills, sweeps, ledger, approval, harness, research, and the pipeline that runs a config
through them), and two thin faces that only adapt the rooms: ``cli`` (the ``tunepack`` command) and
``server`` (the MCP server). Rooms never import a face. Heavy libraries (torch, transformers, trl) are
imported only inside the rendered scripts or the functions that need them, so importing this package
stays fast.
"""

__version__ = "0.1.0"
