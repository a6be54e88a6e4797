"""Redact a raw session file into a copy that stays the same format, before it leaves the machine.

The patterns are the conversion's (``mcp_server.redact``), applied to every string inside the parsed JSON —
never to the encoded text, where an escape such as ``\\n`` in front of a token would hide it from the pattern's
word boundary. A JSON Lines file is rewritten line by line: a line without a secret is copied byte for byte, a
line with one is re-encoded from the redacted value (so JSONL stays JSONL); a line that does not parse keeps its
text with the secrets replaced. A ``.json`` file is re-encoded as a whole (indented if it was). The user's own
files are never modified: the redacted copy goes to ``dst``.

Usage:
    counts = Counter(); scrub_file(src, staging / "pi" / name, counts)   # counts: kind → replacements
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from ..redact import might_hold_secret, redact_text, redact_value


def _line_ending(raw: bytes) -> bytes:
    return raw[len(raw.rstrip(b"\r\n")):]


def scrub_line(raw: bytes, counts: Counter) -> bytes:
    """One JSON Lines line (with its line ending), secrets replaced."""
    text = raw.decode("utf-8", errors="replace")
    if not might_hold_secret(text):
        return raw
    found: Counter = Counter()
    try:
        value = json.loads(text)
    except ValueError:
        clean = redact_text(text, found)
        counts.update(found)
        return clean.encode("utf-8") if found else raw
    clean_value = redact_value(value, found)
    if not found:
        return raw
    counts.update(found)
    return json.dumps(clean_value, ensure_ascii=False).encode("utf-8") + _line_ending(raw)


def _scrub_json(text: str, counts: Counter) -> str | None:
    """The redacted text of a whole .json file, or None when it holds no secret."""
    if not might_hold_secret(text):
        return None
    found: Counter = Counter()
    try:
        value = json.loads(text)
    except ValueError:
        clean = redact_text(text, found)
    else:
        indent = 2 if "\n" in text.strip() else None
        clean = json.dumps(redact_value(value, found), ensure_ascii=False, indent=indent)
        clean += "\n" if text.endswith("\n") else ""
    counts.update(found)
    return clean if found else None


def scrub_file(src: Path, dst: Path, counts: Counter) -> None:
    """Write ``src`` to ``dst`` with every secret replaced by its marker, counting replacements by kind."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix == ".jsonl":
        with open(src, "rb") as reader, open(dst, "wb") as writer:
            for raw in reader:
                writer.write(scrub_line(raw, counts))
    elif src.suffix == ".json":
        clean = _scrub_json(src.read_text(encoding="utf-8", errors="replace"), counts)
        if clean is None:
            shutil.copyfile(src, dst)
        else:
            dst.write_text(clean, encoding="utf-8")
    else:
        shutil.copyfile(src, dst)
