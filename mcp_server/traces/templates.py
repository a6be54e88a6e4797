"""Shape converted rows for the training chat template they will be rendered with.

The rules per template (Llama 3.x: one tool call per message and no text beside it; Gemma 4: text said before
calling as a message of its own, or removed for the earlier revisions; …) live in the standard-library module
``mcp_server/evals/kit/shaping.py``, which the training script (plain ``messages`` rows) and the eval kit
(held-out rows for next-action) embed too, so every path shapes a row alike; this module wraps it for the
converter, with its errors as ``TraceError``.

``gemma3`` (raises on tool messages), ``llama3`` and ``phi3`` (drop tool calls) cannot train conversations
with tool calls: ``check_template`` refuses them and names what works — a keeper template of the right
family, or prompt/completion rows (``--rows turn``), where ``flatten_tools`` spells calls and results out
as text (``<tool_call>{"name": …, "arguments": …}</tool_call>`` / ``<tool_response>…</tool_response>``).
"""

from __future__ import annotations

from collections import Counter

from ..errors import TraceError
from ..evals.kit.shaping import ShapingError, flatten_tool_messages, shape_messages
from .model import DROPPER_TEMPLATES, KEEPER_TEMPLATES


def normalize_name(template: str | None) -> str | None:
    if not template:
        return None
    name = template.split(":", 1)[1] if template.startswith(("trl:", "tunepack:")) else template
    if name not in KEEPER_TEMPLATES and name not in DROPPER_TEMPLATES:
        known = ", ".join(KEEPER_TEMPLATES + tuple(DROPPER_TEMPLATES))
        raise TraceError(f"The template '{template}' is not one the converter can shape rows for.",
                         f"use one of: {known} (or leave --template out for qwen3-style rows).")
    return name


def has_tools(messages: list[dict]) -> bool:
    return any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


def check_template(name: str | None, rows: str, with_tools: int) -> None:
    """Refuse a template that would lose the tool calls of ``with_tools`` conversations."""
    if name in DROPPER_TEMPLATES and rows == "conversation" and with_tools:
        keepers = ", ".join(KEEPER_TEMPLATES)
        raise TraceError(
            f"The chat template '{name}' {DROPPER_TEMPLATES[name]}, but {with_tools} converted conversations "
            "hold tool calls: as conversation rows the model would never see or learn them.",
            f"convert with --template set to a template that carries tool calls and matches the model family "
            f"({keepers}), or write prompt/completion rows with --rows turn, where tool calls and results are "
            "spelled out as text any template renders.")


def shape(messages: list[dict], name: str | None, counts: Counter) -> list[dict]:
    """A copy of ``messages`` shaped for template ``name`` (None / qwen3 / droppers: unchanged); the rules live in
    ``mcp_server/evals/kit/shaping.py``, which the training script and the eval kit embed as well."""
    try:
        return shape_messages(messages, name, counts)
    except ShapingError as exc:
        raise TraceError(exc.problem, exc.fix) from None


def flatten_tools(messages: list[dict]) -> list[dict]:
    """Tool calls and results as plain text (for templates without tool support), roles merged to alternate."""
    return flatten_tool_messages(messages)
