"""Redaction by value: a secret found anywhere in a unit (a session, a row, a JSON document, a text) is replaced at
its every occurrence in that unit.

A detector knows a secret by its shape or by the name beside it (``aws_secret_access_key=…``); the same value
further on (echoed by a tool, pasted bare, used as a call id, a tool name or a dict key) has neither. So a unit
goes through two passes. ``first`` replaces what the detectors find in every string of it, dict keys included,
and collects each found value long and random enough to stand for itself (``values.spreadable``: never a short
word that would wreck the text). ``second`` replaces every remaining occurrence of a collected value (an exact
substring, the longest first) by its kind's marker, counting each. A unit where nothing was collected skips the
second pass. Keys that collide once redacted are all kept (``key``, ``key_2``, …); ``distinct`` keeps ids
one-to-one the same way.

Usage:
    redaction = Redaction(counts)
    parts = [redaction.first(p) for p in parts]    # every part of the unit (messages, tools, metadata)
    parts = [redaction.second(p) for p in parts]   # then every part again
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .context import key_role, key_secret
from .scan import Finding, find_secrets
from .values import spreadable

SHORT = 64
_CLEAN: dict[str, None] = {}  # short strings known to hold no secret: the keys, ids, names and models a session repeats


def _findings(text: str) -> list[Finding]:
    """``find_secrets``, remembering the short strings that hold none (a bounded set, never a secret)."""
    if len(text) > SHORT:
        return find_secrets(text)
    if text in _CLEAN:
        return []
    found = find_secrets(text)
    if not found:
        if len(_CLEAN) >= 16384:
            _CLEAN.clear()
        _CLEAN[text] = None
    return found


def marker(kind: str) -> str:
    return f"[REDACTED_{kind.upper()}]"


def put(out: dict, key: Any, item: Any) -> None:
    """``out[key] = item``, under ``key_2``, ``key_3``, … when redaction made ``key`` collide with another."""
    if key in out:
        n = 2
        while f"{key}_{n}" in out:
            n += 1
        key = f"{key}_{n}"
    out[key] = item


class Redaction:
    """The redaction of one unit: ``first`` then ``second`` over all its parts; replacements counted by kind into
    ``counts`` (and in all into ``replaced``)."""

    def __init__(self, counts: Counter) -> None:
        self.counts = counts
        self.replaced = 0
        self.values: dict[str, str] = {}  # each found value that is replaced throughout → its kind
        self._longest_first: list[tuple[str, str]] | None = None

    def _found(self, secret: str, kind: str) -> None:
        if secret not in self.values and spreadable(secret, kind):
            self.values[secret] = kind
            self._longest_first = None

    def _count(self, kind: str, n: int = 1) -> None:
        self.counts[kind] += n
        self.replaced += n

    # --- pass 1: what the detectors find ----------------------------------------------------------------------

    def text(self, text: str) -> str:
        """``text`` with every secret the detectors find replaced by its marker (the same object when none)."""
        if len(text) <= SHORT and text in _CLEAN:
            return text
        findings = _findings(text)
        if not findings:
            return text
        parts, pos = [], 0
        for f in findings:
            self._found(text[f.start:f.end], f.kind)
            parts += [text[pos:f.start], marker(f.kind)]
            self._count(f.kind)
            pos = f.end
        parts.append(text[pos:])
        return "".join(parts)

    def member(self, key: Any, value: Any) -> Any:
        """A dict member's value; a string under a secret-like key (``"password"``, ``"Authorization"``) is judged
        as such when nothing in it was found on its own."""
        if not isinstance(value, str):
            return self.first(value)
        clean = self.text(value)
        if clean is value and isinstance(key, str) and key_role(key):
            found = key_secret(key, value)
            if found:
                start, end, kind = found
                self._found(value[start:end], kind)
                self._count(kind)
                return value[:start] + marker(kind) + value[end:]
        return clean

    def first(self, value: Any) -> Any:
        """Pass 1 over a JSON-like value: every string in it, dict keys included, redacted; found values kept."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict = {}
            for key, item in value.items():
                clean = item if item is None else self.member(key, item) if isinstance(item, str) else self.first(item)
                if isinstance(key, str) and (len(key) > SHORT or key not in _CLEAN):
                    key = self.text(key)
                if key in out:
                    put(out, key, clean)
                else:
                    out[key] = clean
            return out
        if isinstance(value, list):
            return [self.first(item) for item in value]
        return value

    # --- pass 2: every other occurrence of what was found --------------------------------------------------------

    def spread(self, text: str) -> str:
        """``text`` with every occurrence of a collected value replaced by its marker."""
        if self._longest_first is None:
            self._longest_first = sorted(self.values.items(), key=lambda kv: -len(kv[0]))
        for secret, kind in self._longest_first:
            if secret in text:
                self._count(kind, text.count(secret))
                text = text.replace(secret, marker(kind))
        return text

    def second(self, value: Any) -> Any:
        """Pass 2 over a JSON-like value that went through ``first``; nothing to do when nothing was collected."""
        if not self.values:
            return value
        if isinstance(value, str):
            return self.spread(value)
        if isinstance(value, dict):
            out: dict = {}
            for key, item in value.items():
                put(out, self.spread(key) if isinstance(key, str) else key, self.second(item))
            return out
        if isinstance(value, list):
            return [self.second(item) for item in value]
        return value

    def redact(self, value: Any) -> Any:
        """Both passes over one value that is the whole unit."""
        return self.second(self.first(value))


def distinct(ids: dict[str, str]) -> dict[str, str]:
    """Original → redacted ids made one-to-one: an id that redaction turned into the text of another (two call ids
    holding different tokens both become ``[REDACTED_…]``) gets a suffix (``_2``, …), so that each still names one
    call. Ids redaction left alone keep their text."""
    taken = {new for old, new in ids.items() if new == old}
    out: dict[str, str] = {}
    for old, new in ids.items():
        if new != old:
            candidate, n = new, 2
            while candidate in taken:
                candidate, n = f"{new}_{n}", n + 1
            taken.add(candidate)
            new = candidate
        out[old] = new
    return out
