"""Secret redaction: replace credentials in any text before it is written as training data or leaves the machine.

The shapes come from detect-secrets (Yelp's maintained scanner: AWS keys, JWTs, Slack tokens and webhooks,
Stripe, GitHub, GitLab, PyPI, SendGrid, Twilio, Azure, … — ``library.py``, run in-process, never its network
verification); ``shapes.py`` adds what it lacks (Hugging Face and Anthropic keys, current OpenAI keys, Google
``AIza`` keys, whole PEM private keys, tokens glued to the text before them, URL passwords with any character,
``Authorization`` headers); ``context.py`` finds high-entropy values of secret-like names (``password=…``,
``"api_key": "…"``, ``export FOO_SECRET=…``). Git SHAs, digests and UUIDs are never redacted (``values.py``).

A match becomes a marker such as ``[REDACTED_HF_TOKEN]``; a header or URL keeps its frame (``Authorization:
Bearer [REDACTED_BEARER_TOKEN]``, ``postgres://app:[REDACTED_URL_PASSWORD]@db``). Counts per kind (``KINDS``) go
to the caller's ``Counter``: the conversion's stats report and ``tunepack traces push``'s redaction report.

Redaction is by value (``session.py``): a unit (a text, a JSON value, a whole session through ``Redaction``) is
scanned first, and every value found anywhere in it that is long and random enough is then replaced at each of
its occurrences in the unit — a key named where it was set (``aws_secret_access_key=…``) is gone where it is
echoed bare too. Every string is scanned, dict keys and ids included.

Usage:
    counts = Counter(); clean = redact_text(text, counts)
    clean_value = redact_value(json.loads(line), counts)   # every string inside, keys too; a "password" key's value
    redaction = Redaction(counts)                           # one session in parts: first every part, then again
    parts = [redaction.first(p) for p in parts]; parts = [redaction.second(p) for p in parts]
    findings = find_secrets(text)                           # [Finding(start, end, kind), ...]
"""

from __future__ import annotations

from collections import Counter

from .scan import KINDS, Finding, find_secrets, might_hold_secret
from .session import Redaction, distinct, marker

__all__ = ["KINDS", "Finding", "Redaction", "distinct", "find_secrets", "marker", "might_hold_secret", "redact_text",
           "redact_value"]


def redact_text(text: str, counts: Counter) -> str:
    """``text`` with every secret replaced by its marker, a found value at each of its occurrences in ``text``; the
    replacements counted by kind into ``counts``."""
    return Redaction(counts).redact(text)


def redact_value(value, counts: Counter):
    """Redact every string inside a JSON-like value, dict keys included (colliding keys are kept as ``key_2``);
    the value of a secret-like key (``"password"``, ``"client_secret"``) is judged as such, and a value found
    anywhere in ``value`` is replaced wherever it occurs in it."""
    return Redaction(counts).redact(value)

