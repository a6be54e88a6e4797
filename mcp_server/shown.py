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
from .redact import redact_text, redact_value

T = TypeVar("T")


def _member(key: Any, value: Any, counts: Counter) -> Any:
    """A value under a name: a string goes through ``redact_value`` with its key, so a secret-like name
    ("password", "api_key") marks its value as one."""
    if isinstance(value, str) and isinstance(key, str):
        return redact_value({key: value}, counts)[key]
    return _clean(value, counts)


def _clean(value: Any, counts: Counter) -> Any:
    if isinstance(value, str):
        return redact_text(value, counts)
    if isinstance(value, BaseModel):
        update = {name: _member(name, getattr(value, name), counts) for name in type(value).model_fields}
        update.update({k: _member(k, v, counts) for k, v in (value.model_extra or {}).items()})
        return value.model_copy(update=update)
    if isinstance(value, dict):
        return {_clean(k, counts): _member(k, v, counts) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_clean(v, counts) for v in value)
    return value


def shown(value: T, counts: Counter | None = None) -> T:
    """``value`` with every string in it (model fields, extra fields, dict keys, list items) redacted."""
    return _clean(value, Counter() if counts is None else counts)


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
