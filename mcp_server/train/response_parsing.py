"""tunepack's tool-call parser in TRL's GRPO tool loop, for every template tunepack trains with.

TRL's ``GRPOTrainer(tools=...)`` reads each completion with ``trl.chat_template_utils.parse_response``,
which calls ``tokenizer.parse_response(ids, prefix=..., tools=...)`` (transformers' declarative parser,
driven by ``tokenizer.response_template``). When the tokenizer has no ``response_template``, the trainer's
``__init__`` calls ``add_response_schema``, which recognises a template only by its exact text: tunepack's
training templates (``templates/chat/*``, the stock ones plus generation markers) are refused with
"Unrecognized chat template". Setting TRL's spec by hand gets past that, but its regex specs misread some
calls the templates write: Gemma 4 before v5 writes None as ``None`` and TRL's JSON reading fails (the whole
call becomes text), names with dots (``math.factorial``) and keys that are not ``\\w+`` are not calls to
it, and Llama calls after ``<|python_tag|>``, with ``"arguments"``, or several in one message are text.

``use_tunepack_parser(tokenizer)`` gives the tokenizer (or a processor's inner tokenizer) TRL's spec for
its family as ``response_template`` (so the trainer accepts it and streaming users keep a parser) and an
instance-level ``parse_response`` that reads with ``mcp_server.evals.kit.toolcalls`` instead; nothing
global is patched, and only that tokenizer object is affected (a tokenizer saved and loaded again has the
spec only). ``parse_response(tokenizer, ids)`` is the same reading as a plain function, with TRL's return
shape and TRL's fallback (a message that tries to call but does not parse becomes plain text, special
tokens skipped, with no tool calls).
"""

from __future__ import annotations

import copy
from typing import Any

from mcp_server.evals.kit.toolcalls import Parsed, family_of, parse

# TRL's response_template spec per family (names in trl.chat_template_utils).
TRL_SPECS = {"hermes": "qwen3_template", "llama3": "llama3_template", "gemma4": "gemma4_template"}


class ResponseParsingError(ValueError):
    """What the tokenizer's chat template or a generated message does not allow; carries the fix."""

    def __init__(self, problem: str, fix: str):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem} Fix: {fix}")


def template_family(tokenizer) -> str:
    """The tool-call family of the tokenizer's chat template, or ResponseParsingError."""
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    family = family_of(template or "")
    if family is None:
        raise ResponseParsingError(
            "The tokenizer's chat template writes no tool calls tunepack can read (it knows Qwen/Hermes "
            "<tool_call> JSON, Llama 3.1/3.2 JSON and Gemma 4 <|tool_call>).",
            "Train with one of those templates (chat_template: model, or a templates/chat name), or leave the "
            "tokenizer to TRL's own add_response_schema.")
    return family


def to_message(parsed: Parsed) -> dict:
    """The assistant message in TRL's shape: role, content, tool_calls (when any), reasoning_content (when any)."""
    message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
    if parsed.calls:
        message["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in parsed.calls]
    if parsed.reasoning:
        message["reasoning_content"] = parsed.reasoning
    return message


def read_message(tokenizer, response, family: str | None = None) -> dict:
    """``response`` (text, or token ids decoded with special tokens kept) as TRL's message dict; a message
    that tries to call but does not parse raises ValueError (TRL's ``parse_response`` turns that into text)."""
    text = response if isinstance(response, str) else tokenizer.decode(response, skip_special_tokens=False)
    parsed = parse(family or template_family(tokenizer), text)
    if not parsed.well_formed:
        raise ValueError(f"malformed tool call: {parsed.error}")
    return to_message(parsed)


def parse_response(tokenizer, ids: list[int], prefix: list[int] | None = None, tools: list | None = None) -> dict:
    """TRL's ``parse_response`` with tunepack's reading: same arguments (``prefix`` and ``tools`` are accepted
    and not needed: the templates' syntax types every value), same return shape, same fallback."""
    try:
        return read_message(tokenizer, ids)
    except ValueError:
        return {"role": "assistant", "content": tokenizer.decode(ids, skip_special_tokens=True)}


class _TunepackParse:
    """Bound as ``tokenizer.parse_response``: the signature transformers gives it, tunepack's reading."""

    def __init__(self, tokenizer, family: str):
        self.tokenizer, self.family = tokenizer, family

    def __call__(self, response, schema=None, *, prefix=None, tools=None):
        if schema is not None:  # an explicit spec asks for transformers' own reading
            return type(self.tokenizer).parse_response(self.tokenizer, response, schema, prefix=prefix, tools=tools)
        return read_message(self.tokenizer, response, self.family)


def use_tunepack_parser(processing_class, family: str | None = None):
    """Make TRL's tool loop (and anything calling ``tokenizer.parse_response``) read tool calls with tunepack's
    parser. Returns ``processing_class``, like TRL's ``add_response_schema``."""
    import trl.chat_template_utils as trl_templates
    from transformers import ProcessorMixin

    tokenizer = processing_class.tokenizer if isinstance(processing_class, ProcessorMixin) else processing_class
    family = family or template_family(processing_class)
    tokenizer.response_template = copy.deepcopy(getattr(trl_templates, TRL_SPECS[family]))
    tokenizer.parse_response = _TunepackParse(tokenizer, family)
    return processing_class
