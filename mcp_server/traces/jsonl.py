"""Tolerant JSON Lines reading: a bad line is counted, never fatal.

A line that does not parse is tried again with ``json.JSONDecoder.raw_decode`` from left to right, so
a line holding two objects written without a newline between them (a real writer bug) still yields
both objects — and is reported as malformed, because the file is damaged there. A line cut short, or
holding something other than objects, yields what could be decoded and is reported too.

Usage:
    for line_no, entry in read_jsonl(path, report): ...
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ..sniff import decode_line, first_object  # noqa: F401  (moved there: the config loader sniffs too)
from .stats import FileReport


def read_jsonl(path: Path, report: FileReport) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every object in the file; damaged lines go to ``report``."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            report.lines = number
            text = line.strip()
            if not text:
                continue
            objects, clean = decode_line(text)
            if not clean:
                report.malformed(number)
            for obj in objects:
                yield number, obj


def read_json(path: Path, report: FileReport) -> object | None:
    """A whole .json file, or None (reported as malformed line 1) when it does not parse."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    report.lines = text.count("\n") + 1
    try:
        return json.loads(text)
    except ValueError:
        report.malformed(1)
        return None
