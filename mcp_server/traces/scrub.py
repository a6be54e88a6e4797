"""Redact a raw session into a copy that stays the same format, before it leaves the machine.

The patterns are the conversion's (``mcp_server.redact``), applied to every string inside the parsed JSON, dict
keys included — never to the encoded text, where an escape such as ``\\n`` in front of a token would hide it from
the pattern's word boundary. A session (all its files) is one unit of ``Redaction``: first each file is copied
redacted, and each secret value found anywhere in the session is kept; then every copy that still holds one of
those values has it replaced too (an AWS key named in one line and echoed bare in another file of the session).

A JSON Lines file is rewritten line by line: a line without a secret is copied byte for byte, a line with one is
re-encoded from the redacted value (so JSONL stays JSONL); a line that does not parse keeps its text with the
secrets replaced. A ``.json`` file is re-encoded as a whole (indented if it was). The user's own files are never
modified: the redacted copies go to their destinations.

Usage:
    counts = Counter(); scrub_session([(src, staging / "pi" / name), ...], counts)   # counts: kind → replacements
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

from ..redact import Redaction, might_hold_secret

ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


def _line_ending(raw: bytes) -> bytes:
    return raw[len(raw.rstrip(b"\r\n")):]


def _line(raw: bytes, redaction: Redaction, spread: bool) -> bytes:
    """One JSON Lines line (with its line ending) after one pass of ``redaction``; the same bytes when nothing in
    it was replaced."""
    text = raw.decode("utf-8", errors="replace")
    before = redaction.replaced
    try:
        value = json.loads(text)
    except ValueError:
        clean = redaction.spread(text) if spread else redaction.text(text)
        return clean.encode("utf-8") if redaction.replaced != before else raw
    clean_value = redaction.second(value) if spread else redaction.first(value)
    if redaction.replaced == before:
        return raw
    return json.dumps(clean_value, ensure_ascii=False).encode("utf-8") + _line_ending(raw)


def _json(text: str, redaction: Redaction, spread: bool) -> str | None:
    """The text of a whole .json file after one pass of ``redaction``, or None when nothing in it was replaced."""
    before = redaction.replaced
    try:
        value = json.loads(text)
    except ValueError:
        clean = redaction.spread(text) if spread else redaction.text(text)
    else:
        indent = 2 if "\n" in text.strip() else None
        clean_value = redaction.second(value) if spread else redaction.first(value)
        clean = json.dumps(clean_value, ensure_ascii=False, indent=indent) + ("\n" if text.endswith("\n") else "")
    return clean if redaction.replaced != before else None


def _first(src: Path, dst: Path, redaction: Redaction) -> None:
    """Write ``src`` to ``dst`` with what the detectors find replaced (other files are copied as they are)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix == ".jsonl":
        with open(src, "rb") as reader, open(dst, "wb") as writer:
            for raw in reader:
                hold = might_hold_secret(raw.decode("utf-8", errors="replace"))
                writer.write(_line(raw, redaction, spread=False) if hold else raw)
    elif src.suffix == ".json":
        text = src.read_text(encoding="utf-8", errors="replace")
        clean = _json(text, redaction, spread=False) if might_hold_secret(text) else None
        if clean is None:
            shutil.copyfile(src, dst)
        else:
            dst.write_text(clean, encoding="utf-8")
    else:
        shutil.copyfile(src, dst)


def _probes(redaction: Redaction) -> list[str]:
    """For each value found in the session, a piece of it that any JSON encoder writes as it is (its longest run
    of letters and digits), so that a line without one of them needs no parsing."""
    probes = []
    for value in redaction.values:
        run = max(ALNUM_RUN.findall(value), key=len, default="")
        probes.append(run if len(run) >= 4 else json.dumps(value, ensure_ascii=False)[1:-1])
    return probes


def _second(dst: Path, redaction: Redaction, probes: list[str]) -> None:
    """Rewrite the copy ``dst`` with every other occurrence of the session's found values replaced."""
    if dst.suffix == ".jsonl":
        with open(dst, "rb") as reader:
            lines = reader.readlines()
        out = [_line(raw, redaction, spread=True) if any(p.encode() in raw for p in probes) else raw for raw in lines]
        if out != lines:
            dst.write_bytes(b"".join(out))
    elif dst.suffix == ".json":
        text = dst.read_text(encoding="utf-8", errors="replace")
        clean = _json(text, redaction, spread=True) if any(p in text for p in probes) else None
        if clean is not None:
            dst.write_text(clean, encoding="utf-8")


def scrub_session(files: list[tuple[Path, Path]], counts: Counter) -> None:
    """Write each ``(src, dst)`` of one session with every secret replaced by its marker, a value found anywhere in
    the session at each of its occurrences in all of them; replacements counted by kind into ``counts``."""
    redaction = Redaction(counts)
    for src, dst in files:
        _first(src, dst, redaction)
    if redaction.values:
        probes = _probes(redaction)
        for _, dst in files:
            _second(dst, redaction, probes)


def scrub_file(src: Path, dst: Path, counts: Counter) -> None:
    """``scrub_session`` of a session of one file."""
    scrub_session([(src, dst)], counts)
