"""tunepack: post-train small language models end to end from a coding agent.

The package is a flat set of rooms, one per capability (config, train, jobs, tracking, registry,
...) plus thin faces (``cli``; the MCP ``server`` comes later) that only adapt them.
Heavy libraries (torch, transformers, trl) are imported only inside the rendered training script
or inside functions that need them, so importing this package stays fast.
"""

__version__ = "0.1.0"
