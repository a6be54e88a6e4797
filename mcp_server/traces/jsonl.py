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

from .stats import FileReport

_DECODER = json.JSONDecoder()


def decode_line(text: str) -> tuple[list[dict], bool]:
    """The objects on one line and whether the line was clean (exactly one JSON object)."""
    try:
        value = json.loads(text)
    except ValueError:
        pass
    else:
        return ([value], True) if isinstance(value, dict) else ([], False)
    found, pos = [], 0
    while pos < len(text):
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except ValueError:
            break
        if isinstance(value, dict):
            found.append(value)
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
    return found, False


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


def first_object(path: Path, max_lines: int = 30) -> list[dict]:
    """Up to ``max_lines`` decodable objects from the head of a JSON Lines file (format detection)."""
    found: list[dict] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for _, line in zip(range(max_lines), handle, strict=False):
                if line.strip():
                    found.extend(decode_line(line.strip())[0])
    except OSError:
        return []
    return found
