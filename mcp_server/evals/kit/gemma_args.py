"""Gemma 4's tool-call argument syntax, read back into Python values.

The Gemma 4 templates write ``call:NAME{key:VALUE,...}`` with their ``format_argument`` macro:
- a string is ``<|"|>`` + the text + ``<|"|>``, the text written raw (commas, quotes, braces, newlines and
  anything else but the ``<|"|>`` token itself come through untouched);
- ``true`` / ``false``; None as ``null`` (gemma4_v5) or ``None`` (the earlier revisions);
- a number as Python prints it (``3``, ``-2.5``, ``1e-05``);
- a mapping as ``{key:VALUE,...}`` with keys bare (``<|"|>``-quoted keys are read too), sorted;
- a list as ``[VALUE,...]``.
No whitespace is written; whitespace between items is tolerated. A JSON ``"..."`` string is read too.
"""

from __future__ import annotations

import json
import re

QUOTE = '<|"|>'
_BARE = re.compile(r"[^,:{}\[\]]*")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_WORDS = {"true": True, "false": False, "null": None, "None": None}


def read_arguments(text: str, start: int) -> dict:
    """The mapping that opens at ``text[start] == "{"`` and runs to the end of ``text``."""
    value, end = _value(text, start)
    if not isinstance(value, dict):
        raise ValueError("the arguments are not a {...} mapping")
    if text[end:].strip():
        raise ValueError(f"unexpected text after the arguments: {text[end:].strip()[:40]!r}")
    return value


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _value(text: str, i: int):
    """(value, index after it) for the value starting at ``i``."""
    i = _skip(text, i)
    if text.startswith(QUOTE, i):
        end = text.find(QUOTE, i + len(QUOTE))
        if end < 0:
            raise ValueError(f"a {QUOTE} string opened at char {i} is never closed")
        return text[i + len(QUOTE):end], end + len(QUOTE)
    if text.startswith('"', i):
        try:
            return json.JSONDecoder().raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise ValueError(f"bad JSON string at char {i} ({e.msg})") from None
    if text.startswith("{", i):
        return _items(text, i + 1, "}")
    if text.startswith("[", i):
        return _items(text, i + 1, "]")
    word = _BARE.match(text, i).group()  # type: ignore[union-attr]  # the pattern matches the empty string
    bare = word.strip()
    if bare in _WORDS:
        return _WORDS[bare], i + len(word)
    if (m := _NUMBER.fullmatch(bare)):
        return (float(bare) if m.group(1) or m.group(2) else int(bare)), i + len(word)
    if i >= len(text):
        raise ValueError("the arguments end where a value should be")
    raise ValueError(f"unquoted value {bare[:30]!r} at char {i} (strings are written {QUOTE}...{QUOTE})")


def _key(text: str, i: int) -> tuple[str, int]:
    i = _skip(text, i)
    if text.startswith(QUOTE, i) or text.startswith('"', i):
        key, i = _value(text, i)
    else:
        key = _BARE.match(text, i).group()  # type: ignore[union-attr]
        i += len(key)
        key = key.strip()
        if not key:
            raise ValueError(f"a key is missing at char {i}")
    i = _skip(text, i)
    if not text.startswith(":", i):
        raise ValueError(f"expected ':' after the key {key!r} at char {i}")
    return key, i + 1


def _items(text: str, i: int, close: str):
    """The mapping (close ``}``) or list (close ``]``) whose items start at ``i``."""
    items: dict | list = {} if close == "}" else []
    i = _skip(text, i)
    if text.startswith(close, i):
        return items, i + 1
    while True:
        if isinstance(items, dict):
            key, i = _key(text, i)
            items[key], i = _value(text, i)
        else:
            value, i = _value(text, i)
            items.append(value)
        i = _skip(text, i)
        if text.startswith(",", i):
            i += 1
        elif text.startswith(close, i):
            return items, i + 1
        else:
            raise ValueError(f"expected ',' or '{close}' at char {i}, got {text[i:i + 20]!r}" if i < len(text)
                             else f"the arguments end before their closing '{close}'")
