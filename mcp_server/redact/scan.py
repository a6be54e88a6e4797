"""Find the secrets in a string: the anchor pre-check, the three sources of findings, and their merge.

One pass of a regular expression over the lower-cased text finds which anchors occur (``might_hold_secret`` stops
there when none does — most strings of a trace); then only the rules and plugins whose anchors occurred run. Findings that overlap merge into one; the merged span keeps the kind of its most specific member
(an ``Authorization`` header, then our shapes, then the library's, then a keyword context).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from typing import NamedTuple

from . import context, library, shapes

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class Finding(NamedTuple):
    start: int
    end: int
    kind: str


# ASCII characters of agent traces and source code, the most frequent first (counted on the shared traces and the
# transformers sources): the pre-check pivots each anchor on its rarest character, so that the search loop seldom
# starts a match attempt (a trie keyed on first letters would try at almost every position of lower-case text)
COMMON = " etsinoardl_cmpuhfg.,=()\"bk:wyvx-`10z2/*[]q#5>34|j6879;+{}@'<\\&!?$~%^"


def _pivot(anchor: str) -> int:
    rank = [COMMON.find(c) if c in COMMON else len(COMMON) for c in anchor]
    return rank.index(max(rank))


def _trie(parts: dict[str, list[str]]) -> str:
    """A regular expression matching each anchor from its pivot on: a trie of the parts after the pivots, each
    ending in look-behinds for the anchors' text before the pivot."""
    root: dict = {}
    for part in parts:
        node = root
        for char in part:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern_of(node: dict, part: str) -> str:
        branches = [re.escape(c) + pattern_of(child, part + c) for c, child in sorted(node.items()) if c]
        leaf = None
        if "" in node:
            behind = [a for a in parts[part] if len(a) > len(part)]
            looks = [f"(?<={re.escape(a)})" for a in behind]
            leaf = "" if len(behind) < len(parts[part]) else looks[0] if len(looks) == 1 else f"(?:{'|'.join(looks)})"
        alternatives = branches + ([] if leaf is None else [leaf])
        if len(alternatives) == 1:
            return alternatives[0]
        return "(?:" + "|".join(alternatives) + ")"

    return pattern_of(root, "")


ANCHORS = sorted({a for rule in shapes.RULES for a in rule.anchors} | {a for p in library.PLUGINS for a in p.anchors}
                 | set(context.ANCHORS))
_PARTS: dict[str, list[str]] = {}
for _anchor in ANCHORS:
    _PARTS.setdefault(_anchor[_pivot(_anchor):], []).append(_anchor)
_PRECHECK = re.compile(_trie(_PARTS))
# a match of part P may stand for any anchor whose part is a prefix of P; a hit also stands for the anchors inside it
_RESOLVE = {p: [(a, _pivot(a)) for q, anchors in _PARTS.items() if p.startswith(q) for a in anchors] for p in _PARTS}
_CONTAINED = {a: frozenset(b for b in ANCHORS if b in a) for a in ANCHORS}
KINDS = tuple(dict.fromkeys([r.kind for r in shapes.RULES] + list(library.KINDS) + ["password", "secret"]))


# a long run of base64 characters (an image, a signature, a packed blob) is scanned only for its first KEEP
# characters: no shape fits inside it but at its start (a base64-wrapped PEM key, a session token after its
# name — whose value extends over the whole run), and random base64 is where anchors occur by chance
_RUN = re.compile(r"(?<![a-z0-9+/])[a-z0-9+/]{1024,}")
_WINDOW = re.compile(r"[a-z0-9+/]{64}")
KEEP = 64


def _may_hold_a_run(low: str) -> bool:
    """Cheap: a run of 1024 covers one of the 64-character windows taken every 512 characters."""
    return any(_WINDOW.fullmatch(low, i, i + 64) for i in range(0, len(low) - 63, 512))


def lower(text: str) -> str:
    """The lower-cased text, character for character (so that positions in it are positions in ``text``), with
    long base64 runs blanked after their first ``KEEP`` characters."""
    low = text.lower()
    if len(low) != len(text):
        low = text.translate(_ASCII_LOWER)
    if len(low) < 1024 or not _may_hold_a_run(low):
        return low
    parts, pos = [], 0
    for m in _RUN.finditer(low):
        keep = m.start() + KEEP
        parts += [low[pos:keep], "\0" * (m.end() - keep)]
        pos = m.end()
    return "".join(parts) + low[pos:] if parts else low


def might_hold_secret(text: str) -> bool:
    """A cheap pre-check: False means ``find_secrets`` finds nothing. Also true of JSON-encoded text, since the
    anchors are ASCII without quotes or backslashes, which JSON never escapes."""
    return bool(text) and _PRECHECK.search(lower(text)) is not None


def _hits(low: str, first: int) -> set[str]:
    """The anchors that occur in ``low`` (the first of them at ``first`` or after)."""
    hits: set[str] = set()
    for m in _PRECHECK.finditer(low, first):
        for anchor, pivot in _RESOLVE[m.group()]:
            if low.startswith(anchor, m.start() - pivot):
                hits |= _CONTAINED[anchor]
    return hits


def _own(text: str, low: str, hits: set[str]) -> Iterable[tuple[int, int, str, int]]:
    for rule in shapes.RULES:
        if hits.isdisjoint(rule.anchors):
            continue
        for m in rule.pattern.finditer(low if rule.lowered else text):
            start, end = m.span("secret") if "secret" in rule.pattern.groupindex else m.span()
            if rule.check is None or rule.check(text[start:end]):
                yield start, end, rule.kind, 0 if rule.kind in ("bearer_token", "basic_auth") else 1


def _merge(found: list[tuple[int, int, str, int]]) -> list[Finding]:
    out: list[Finding] = []
    rank = 0
    for start, end, kind, r in sorted(found, key=lambda f: (f[0], f[3], -f[1])):
        if out and start < out[-1].end:
            last = out[-1]
            better = r < rank
            out[-1] = Finding(last.start, max(last.end, end), kind if better else last.kind)
            rank = min(rank, r)
        else:
            out.append(Finding(start, end, kind))
            rank = r
    return out


def find_secrets(text: str) -> list[Finding]:
    """Every secret in ``text``: its span and kind, in order, overlaps merged."""
    if not text:
        return []
    low = text.lower() if len(text) < 1024 else lower(text)  # inlined for the short strings that make most of a trace
    if len(low) != len(text):
        low = text.translate(_ASCII_LOWER)
    first = _PRECHECK.search(low)  # most strings stop here
    if first is None:
        return []
    hits = _hits(low, first.start())
    if not hits:
        return []
    found = list(_own(text, low, hits))
    found += [(s, e, k, 2) for s, e, k in library.find(text, hits)]
    found += [(s, e, k, 3) for s, e, k in context.find(text, low, hits)]
    return _merge([f for f in found if f[1] > f[0]])
