"""What a tool shows of a file passes through here: every string redacted (``mcp_server.redact``), dict keys too.

    page = shown(backend.rows(...))          # a pydantic model (or list/dict/str) with secrets replaced
    with shown_errors(): ...                 # an error raised inside has its problem and fix (or text) redacted

Rows, search hits, statistics (whose frequency tables are keyed by cell values), the trace view (keyed by tool
names and argument keys), ``data_inspect``'s report and the mask preview all come from files an agent named,
so none of them reaches it unredacted. Redaction happens before any cut to fit a page, so a cut never leaves
half a secret the patterns no longer see.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel

from .errors import TunepackError
from .redact import Redaction, redact_text
from .redact.session import put

T = TypeVar("T")


def _clean(value: Any, redaction: Redaction, spread: bool) -> Any:
    """One pass of ``redaction`` over ``value``: the detectors' (``first``) or every found value's (``second``)."""
    if isinstance(value, str):
        return redaction.spread(value) if spread else redaction.text(value)
    if isinstance(value, BaseModel):
        members = [(name, getattr(value, name)) for name in type(value).model_fields]
        update = {k: _member(k, v, redaction, spread) for k, v in members + list((value.model_extra or {}).items())}
        return value.model_copy(update=update)
    if isinstance(value, dict):
        out: dict = {}
        for k, v in value.items():
            put(out, _clean(k, redaction, spread), _member(k, v, redaction, spread))  # colliding keys: key_2
        return out
    if isinstance(value, list | tuple):
        return type(value)(_clean(v, redaction, spread) for v in value)
    return value


def _member(key: Any, value: Any, redaction: Redaction, spread: bool) -> Any:
    """A value under a name: a secret-like name ("password", "api_key") marks its string value as one."""
    if isinstance(value, str) and not spread:
        return redaction.member(key, value)
    return _clean(value, redaction, spread)


def shown(value: T, counts: Counter | None = None) -> T:
    """``value`` with every string in it (model fields, extra fields, dict keys, list items) redacted, and every
    secret found anywhere in it replaced at each of its occurrences (``mcp_server.redact.Redaction``)."""
    redaction = Redaction(Counter() if counts is None else counts)
    clean = _clean(value, redaction, spread=False)
    return _clean(clean, redaction, spread=True) if redaction.values else clean


def redact_error(exc: TunepackError) -> TunepackError:
    """The same error, its problem and fix redacted (a DuckDB message can quote a cell)."""
    counts: Counter = Counter()
    exc.problem, exc.fix = redact_text(exc.problem, counts), redact_text(exc.fix, counts)
    exc.args = (str(exc),)
    return exc


@contextlib.contextmanager
def shown_errors() -> Iterator[None]:
    """Errors raised inside reach the agent redacted: a TunepackError's problem and fix, any other exception's
    text arguments (the server shows an internal error's message too)."""
    try:
        yield
    except TunepackError as exc:
        raise redact_error(exc) from None
    except Exception as exc:
        counts: Counter = Counter()
        exc.args = tuple(redact_text(a, counts) if isinstance(a, str) else a for a in exc.args)
        raise
