"""Tool calls in one generated assistant message, for the three chat-template families tunepack trains.

    family = family_of(tokenizer.chat_template)        # "hermes" | "llama3" | "gemma4" | None
    parsed = parse(family, text)                        # Parsed(content, calls, well_formed, error, reasoning)
    text = render_assistant(template, [Call("f", {"x": 1})], content="Sure.")   # what the template writes

``text`` is what the model generated after the generation prompt, decoded with special tokens kept; it
is cut at the family's first end-of-turn token, so a trailing ``<|im_end|>`` / ``<|eot_id|>`` /
``<turn|>`` / ``<|tool_response>`` (and anything after it) does no harm. The syntax per family, as the
stock templates write it:

- hermes (Qwen3, Hermes): ``<tool_call>\\n{"name": N, "arguments": {...}}\\n</tool_call>`` blocks, any
  number, after optional text; a leading ``<think>...</think>`` goes to ``reasoning``.
- llama3 (Llama 3.1 / 3.2): the whole message is ``{"name": N, "parameters": {...}}`` (``arguments``
  accepted too), optionally after ``<|python_tag|>``; several objects may follow one another, separated by
  ``;`` or newlines (the stock templates themselves refuse more than one call per message); a Llama 3.1
  built-in call is ``<|python_tag|>NAME.call(key="value", ...)``. Any other text is an answer.
- gemma4: ``<|tool_call>call:NAME{key:VALUE,...}<tool_call|>`` blocks, where a VALUE is a string
  ``<|"|>...<|"|>`` (written raw, nothing escaped), ``true``/``false``, ``null`` (``None`` in the early
  revisions), a number, ``{key:VALUE,...}`` or ``[VALUE,...]``; read by the small recursive parser in
  ``gemma_args.py``. A leading ``<|channel>thought ...<channel|>`` goes to ``reasoning``.

A message that tries to call (an opening marker, or for Llama a JSON object naming a function) but does
not parse is ``well_formed=False`` with ``error`` saying what was wrong; ``calls`` keeps those that parsed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, cast

from .errors import KitError
from .gemma_args import read_arguments

FAMILIES = ("hermes", "llama3", "gemma4")

# Where an assistant message ends: the text is cut at the first of these.
ENDS = {"hermes": ("<|im_end|>", "<|endoftext|>"),
        "llama3": ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"),
        "gemma4": ("<turn|>", "<|tool_response>", "<eos>")}
# Where one call ends (next-action stops there: what it scores is decided by the first call); Llama 3's call is the
# whole message, so its stop tokens end it.
CALL_ENDS = {"hermes": ("</tool_call>",), "llama3": (), "gemma4": ("<tool_call|>",)}
PYTHON_TAG = "<|python_tag|>"
PROBE_DATE = "26 Jul 2024"  # Llama 3.2 prints today's date unless given one


@dataclass
class Call:
    name: str
    arguments: dict = field(default_factory=dict)


@dataclass
class Parsed:
    content: str
    calls: list[Call]
    well_formed: bool = True
    error: str | None = None
    reasoning: str = ""


def family_of(template: str) -> str | None:
    """The tool-call family a chat template writes, from its text; None when it is none of the three."""
    if "<|tool_call>" in template and "call:" in template:
        return "gemma4"
    if "<|start_header_id|>" in template and ('"parameters": ' in template or PYTHON_TAG in template):
        return "llama3"
    if "<tool_call>" in template and '"arguments": ' in template and "<function=" not in template:
        return "hermes"
    return None


def parse(family: str, text: str) -> Parsed:
    """The content and tool calls of one generated assistant message (see the module docstring)."""
    if family not in FAMILIES:
        raise KitError(f"Unknown tool-call family {family!r}.", f"Use one of {', '.join(FAMILIES)} "
                       "(family_of(chat_template) tells which one a template writes).")
    cut = min((i for i in (text.find(end) for end in ENDS[family]) if i >= 0), default=len(text))
    return _PARSERS[family](text[:cut])


# --- hermes and gemma4: marked blocks --------------------------------------------------------------

def _blocks(text: str, opener: str, closer: str, read) -> tuple[str, list[Call], list[str]]:
    """(text outside the blocks, the calls read, what went wrong) for ``opener ... closer`` blocks."""
    outside: list[str] = []
    calls: list[Call] = []
    errors: list[str] = []
    pos = 0
    while (start := text.find(opener, pos)) >= 0:
        outside.append(text[pos:start])
        number = len(calls) + len(errors) + 1
        end = text.find(closer, start)
        if end < 0:
            errors.append(f"tool call {number}: {opener} is never closed by {closer}")
            pos = len(text)
            break
        try:
            calls.append(read(text[start + len(opener):end]))
        except ValueError as e:
            errors.append(f"tool call {number}: {e}")
        pos = end + len(closer)
    outside.append(text[pos:])
    return "\n".join(p.strip() for p in outside if p.strip()), calls, errors


def _result(content: str, calls: list[Call], errors: list[str], reasoning: str = "") -> Parsed:
    return Parsed(content, calls, not errors, "; ".join(errors) or None, reasoning)


def _split_reasoning(text: str, opener: str, closer: str, call: str) -> tuple[str, str]:
    """(reasoning, rest) for a message that starts with ``opener ... closer``. The opener may have been
    written by the generation prompt, so a closer alone counts too, unless a call comes before it."""
    stripped = text.lstrip()
    end, starts = stripped.find(closer), stripped.startswith(opener)
    if starts and end < 0:  # still thinking when it stopped: no answer yet
        return stripped[len(opener):].strip(), ""
    if end < 0 or (not starts and (opener in stripped[:end] or call in stripped[:end])):
        return "", text
    return stripped[:end].removeprefix(opener).strip(), stripped[end + len(closer):]


def _call_from(obj, keys=("arguments", "parameters"), need_arguments=False) -> Call:
    """A Call from a decoded ``{"name": ..., "arguments": {...}}`` object."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        raise ValueError('the JSON object has no "name" string')
    if need_arguments and not any(k in obj for k in keys):
        raise ValueError(f'the JSON object naming {obj["name"]!r} has no "parameters"')
    arguments = next((obj[k] for k in keys if k in obj), None)
    if isinstance(arguments, str):  # arguments written as a JSON string
        arguments = json.loads(arguments)
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of {obj['name']!r} are not a JSON object")
    return Call(obj["name"], arguments)


def _hermes_call(body: str) -> Call:
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e.msg} at char {e.pos}): {body.strip()[:80]!r}") from None
    return _call_from(obj)


def _hermes(text: str) -> Parsed:
    reasoning, rest = _split_reasoning(text, "<think>", "</think>", "<tool_call>")
    content, calls, errors = _blocks(rest, "<tool_call>", "</tool_call>", _hermes_call)
    return _result(content, calls, errors, reasoning)


_GEMMA_NAME = re.compile(r"call:([^{}\s]+)\{")


def _gemma_call(body: str) -> Call:
    head = _GEMMA_NAME.match(body.strip())
    if not head:
        raise ValueError(f"expected call:NAME{{...}}, got {body.strip()[:60]!r}")
    return Call(head.group(1), read_arguments(body.strip(), head.end() - 1))


def _gemma4(text: str) -> Parsed:
    reasoning, rest = _split_reasoning(text, "<|channel>", "<channel|>", "<|tool_call>")
    reasoning = reasoning.removeprefix("thought").strip()
    content, calls, errors = _blocks(rest, "<|tool_call>", "<tool_call|>", _gemma_call)
    return _result(content, calls, errors, reasoning)


# --- llama3: the whole message is the call ---------------------------------------------------------

_BUILTIN = re.compile(r"(\w+)\.call\((.*)\)\s*$", re.S)
_BUILTIN_ARG = re.compile(r'(?:^|, )(\w+)="')


def _builtin(name: str, args: str) -> Call:
    """A Llama 3.1 built-in call's ``key="value", ...`` (values written raw, as the template does)."""
    starts = list(_BUILTIN_ARG.finditer(args))
    if args.strip() and (not starts or starts[0].start() != 0):
        raise ValueError(f"{name}.call(...) arguments are not key=\"value\" pairs")
    values = {}
    for m, after in zip(starts, [*starts[1:], None], strict=True):
        raw = args[m.end():after.start() if after else len(args)]
        if not raw.endswith('"'):
            raise ValueError(f"{name}.call(...): the value of {m.group(1)!r} is not closed by '\"'")
        values[m.group(1)] = raw[:-1]
    return Call(name, values)


def _json_calls(body: str) -> tuple[list[Call], list[str]]:
    """JSON call objects (or lists of them) one after another, separated by whitespace or ';'."""
    decoder, pos = json.JSONDecoder(), 0
    calls: list[Call] = []
    while pos < len(body):
        try:
            obj, pos = decoder.raw_decode(body, pos)
            calls.extend(_call_from(o, need_arguments=True) for o in (obj if isinstance(obj, list) else [obj]))
        except ValueError as e:
            where = f" ({e.msg} at char {e.pos})" if isinstance(e, json.JSONDecodeError) else f": {e}"
            return calls, [f"tool call {len(calls) + 1} is not a JSON call{where}"]
        while pos < len(body) and (body[pos].isspace() or body[pos] == ";"):
            pos += 1
    return calls, []


def _llama3(text: str) -> Parsed:
    body = text.strip()
    tagged = body.startswith(PYTHON_TAG)
    body = body.removeprefix(PYTHON_TAG).strip()
    if tagged and (m := _BUILTIN.match(body)):
        try:
            return Parsed("", [_builtin(m.group(1), m.group(2))])
        except ValueError as e:
            return Parsed("", [], False, str(e))
    if not body.startswith(("{", "[")) or (not tagged and '"name"' not in body):
        if tagged:
            return Parsed("", [], False, f"after {PYTHON_TAG} comes neither a JSON call nor NAME.call(...)")
        return Parsed(body, [])
    return _result("", *_json_calls(body))


_PARSERS = {"hermes": _hermes, "llama3": _llama3, "gemma4": _gemma4}


# --- rendering --------------------------------------------------------------------------------------

def as_message(calls: list[Call], content: str = "") -> dict:
    """The assistant message (OpenAI / transformers shape) carrying ``calls`` and ``content``."""
    message: dict = {"role": "assistant", "content": content}
    if calls:  # Llama's template checks for the key itself
        message["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in calls]
    return message


def render_assistant(template: str, calls: list[Call], content: str = "", tools: list[dict] | None = None,
                     **template_kwargs) -> str:
    """The assistant message exactly as ``template`` writes it after its generation prompt.

    Renders ``user, assistant`` and ``user`` + generation prompt with transformers' own renderer (the
    environment ``apply_chat_template`` uses) and returns the difference. ``template_kwargs`` reach the
    template (``bos_token``/``eos_token`` default to "", ``date_string`` to a fixed date; e.g.
    ``builtin_tools=[...]`` for Llama 3.1's built-ins)."""
    from jinja2 import TemplateError
    from transformers.utils.chat_template_utils import render_jinja_template

    kwargs = {"bos_token": "", "eos_token": "", "date_string": PROBE_DATE, **template_kwargs}
    user = [{"role": "user", "content": "Hello."}]

    def render(messages: list[dict], generation_prompt: bool) -> str:
        rendered: Any = render_jinja_template([messages], tools=cast(Any, tools), chat_template=template,
                                              add_generation_prompt=generation_prompt, **kwargs)
        return rendered[0][0]  # (one text per conversation, generation indices)

    try:
        prompt, whole = render(user, True), render([*user, as_message(calls, content)], False)
    except TemplateError as e:
        raise KitError(f"The chat template refuses this assistant message: {e}",
                       "Give it a message it can write (Llama 3.x's stock templates take one tool call per "
                       "message: split several calls into consecutive turns).") from e
    if not whole.startswith(prompt):
        raise KitError("The chat template writes the conversation differently once the assistant turn is added "
                       "(the prompt with its generation prompt is not a prefix), so the assistant part cannot be "
                       "cut out.", "Use a prefix-preserving template (tunepack's templates/chat ones are).")
    return whole[len(prompt):]
