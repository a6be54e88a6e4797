"""Agent traces → SFT data: harness session files become TRL conversational rows.

Reads Pi, Claude Code, Codex, OpenCode, Hermes Agent and Factory Droid sessions and OpenAI-chat / ShareGPT rows, rebuilds the
conversation the model actually saw (active branch, compactions, sub-agents), and writes
``messages`` rows with OpenAI-shaped ``tool_calls`` (dict arguments), ``tool`` results and a ``tools``
column of JSON schemas — or one prompt/completion row per assistant turn — plus a stats report that
counts everything dropped, by reason. Secrets are redacted; the output is written atomically.

Usage:
    tunepack traces convert ~/.pi/agent/sessions -o data/pi.jsonl --thinking drop
    from mcp_server.traces import ConvertOptions, convert
    report = convert(["sessions/"], "out.jsonl", ConvertOptions(rows="turn"))

One module per format (pi, claude_code, codex, opencode, hermes, droid, openai_chat), shared rules in normalize,
schemas, templates, rows, redact and writer. ``push`` (with ``collect`` and ``scrub``) sends the user's own
sessions, raw and redacted, to a Hub dataset repo: ``tunepack traces push --repo NS/NAME``.
"""

from .convert import convert
from .detect import find_sources, sniff
from .model import ConvertOptions
from .read import read_source
from .stats import ConvertReport, FileReport

__all__ = ["ConvertOptions", "ConvertReport", "FileReport", "convert", "find_sources", "read_source", "sniff"]
