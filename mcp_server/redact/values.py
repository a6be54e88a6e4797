"""Is a string the value of a secret? The tests behind the keyword-context rule (``context.py``) and the
library's keyword-based plugins.

Never a secret: git object ids and digests (40 or 64 hex digits, optionally ``sha256:``-prefixed), UUIDs,
numbers, paths and file names, placeholders (``$VAR``, ``<token>``, ``****``). A token-like value must also look
random: at least 16 characters; digits among letters, or letters in short mixed-case runs (not ``CamelCase``
words); Shannon entropy ≥ 3 bits per character (2.5 up to 20 characters; detect-secrets' own measure); not
mostly words (``model_v2_checkpoint``); not an attribute (``config.api_key``). A password needs only 6
characters, but an unquoted one must not be a bare name, attribute or path (``password=password``); the
password of a connection string (``Pwd=…;``) any 6 characters that are not a whole placeholder.

A found secret is also replaced wherever else it occurs in the same session (``spreadable``) when it is long and
random enough that its other occurrences can only be it: a vendor-format token of 12+ characters, a token that
passes ``random_enough``, or a password of 8+ characters with three kinds of character. ``postgres`` or
``hunter2`` are redacted where they were found, never throughout the text.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

PLACEHOLDER = re.compile(r"[$<{*]|\[REDACTED_|%\(|.*(?:\$\{|\{\{|\*{3}|\.{3})"
                         r"|(?i:your[_-]|(?:pass(?:word|wd)?|pwd|secret|token|changeme|redacted|none|null|undefined)$)")
HEX_ID = re.compile(r"(?:sha(?:1|256|512)[:-])?(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})")
UUID = re.compile(r"\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?")
NUMBER = re.compile(r"[0-9][0-9_.,:eE+-]*")
PATH = re.compile(r"(?:~|\.{1,2}|[A-Za-z]:)?[\\/]?(?:[A-Z]?[a-z0-9_.@+~-]*[\\/])+[A-Z]?[a-z0-9_.@+~-]*")
FILE_NAME = re.compile(r"[\w.-]+\.(?:txt|json|ya?ml|toml|ini|env|pem|key|crt|cfg|conf|py|sh|js|ts|md|csv|log|db|"
                       r"sqlite|gpg|asc|p12|pfx|jks)", re.I)
NAME = re.compile(r"[A-Za-z_][A-Za-z_.-]*")  # letters joined by _ . -: a name or an attribute, no digit
REFERENCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")  # self.password, args.token
WORD = re.compile(r"[a-z]{3,}|[A-Z][a-z]{2,}|[A-Z]{3,}")
CAMEL = re.compile(r"[A-Z][a-z]*|[a-z]+")
SEPARATORS = re.compile(r"[_.:/-]+")


X_RUN = re.compile(r"[xX]{4,}")


def _masked(value: str) -> bool:
    """``xxxx`` standing for the value, or for a quarter of it (``AKIAxxxxxxxxxxxxxxxx``, ``sk-abcdxxxxxxxx``); a
    random token that happens to hold ``xXXx`` among 36 other characters is no mask."""
    runs = X_RUN.findall(value)
    return bool(runs) and 4 * sum(map(len, runs)) >= sum(c.isalnum() for c in value)


def not_placeholder(value: str) -> bool:
    """False for ``$VAR``, ``${VAR}``, ``<password>``, ``{{ x }}``, ``****``, ``xxxx…``, ``your-key``, ``password``,
    and for a marker this module wrote (redaction never redacts its own output)."""
    return PLACEHOLDER.match(value) is None and not _masked(value)


def never(value: str) -> bool:
    """Git object ids, digests, UUIDs, numbers, paths and file names."""
    return bool(HEX_ID.fullmatch(value) or UUID.fullmatch(value) or NUMBER.fullmatch(value)
                or PATH.fullmatch(value) or FILE_NAME.fullmatch(value))


@functools.cache
def _entropy_meter():
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString()


def entropy(value: str) -> float:
    return float(_entropy_meter().calculate_shannon_entropy(value))


def wordy(value: str) -> bool:
    """Words joined by ``_ . : / -`` (``model_v2_checkpoint``, ``prod-db-credentials-2``): parts that are whole
    words (lower-case, Capitalised or upper-case, 3+ letters) or numbers make up at least half of it. A random
    token rarely has a separator, and then its parts are mixed-case runs with digits."""
    parts = SEPARATORS.split(value)
    return len(parts) > 1 and sum(len(p) for p in parts if WORD.fullmatch(p) or p.isdigit()) >= 0.5 * len(value)


def _mixed_case_noise(value: str) -> bool:
    """Letters in short mixed-case runs (``QFfPfSepltdOyatW``), not CamelCase words (``AutoModelForCausalLM``)."""
    runs = CAMEL.findall(value)
    return len(runs) >= 4 and sum(map(len, runs)) / len(runs) < 3


def random_enough(value: str) -> bool:
    """A token-like secret: long, letters and digits, high entropy, not words, not an id or a path."""
    if len(value) < 16 or never(value) or not not_placeholder(value) or wordy(value) or REFERENCE.fullmatch(value):
        return False
    if not re.search(r"[A-Za-z]", value):
        return False
    if not re.search(r"[0-9]", value) and not _mixed_case_noise(value):
        return False
    return entropy(value) >= (2.5 if len(value) <= 20 else 3.0)


CLASSES = (re.compile(r"[a-z]"), re.compile(r"[A-Z]"), re.compile(r"[0-9]"), re.compile(r"[^A-Za-z0-9]"))
# kinds a name or a frame vouches for (``password=…``, ``://user:…@``, ``Authorization: Bearer …``), not a vendor's
# format: a value of theirs is judged by itself before it is replaced throughout a session
FRAMED = frozenset({"password", "secret", "url_password", "basic_auth", "bearer_token"})


def spreadable(value: str, kind: str) -> bool:
    """A found secret to replace at its every other occurrence in the session too: 8+ characters, not an id, a
    path or a placeholder; a vendor-format token of 12+ characters, else random (``random_enough``) or of three
    kinds of character (lower, upper, digit, other) at 2.5 bits per character (``char_entropy``)."""
    if len(value) < 8 or value.isspace() or "[REDACTED_" in value or never(value) or WHOLE_PLACEHOLDER.fullmatch(value):
        return False
    if kind not in FRAMED:
        return len(value) >= 12
    if random_enough(value):
        return True
    return sum(1 for c in CLASSES if c.search(value)) >= 3 and char_entropy(value) >= 2.5


def char_entropy(value: str) -> float:
    """Shannon entropy in bits per character over all of ``value``'s characters (``entropy`` counts only base64
    ones, so a password of symbols reads as poorer than it is)."""
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in Counter(value).values()) if n else 0.0


def password_like(value: str, quoted: bool) -> bool:
    """A password: 6+ characters, not a placeholder, id or path; unquoted, not a bare name or attribute."""
    if len(value) < 6 or never(value) or not not_placeholder(value) or REFERENCE.fullmatch(value):
        return False
    if not value[0].isalnum() and value[0] not in "!#%+@^~":  # markup (``:func:``), an option, an operator
        return False
    if re.match(r"(?:~|\.{1,2})?/", value):  # an absolute or relative path (PWD=/home/dev/AppData)
        return False
    return quoted or not NAME.fullmatch(value)


# a placeholder that is the whole value: a random password may well start with ``$`` or ``*``
WHOLE_PLACEHOLDER = re.compile(r"\$\{?[\w.]+\}?|\$\([\w.]+\)|%\(\w+\)s|<[^<>]*>|\{\{.*\}\}|\{[\w.]*\}|\*+|[xX]{4,}|\.{3,}"
                               r"|\[REDACTED_\w+\]|(?i:your[_-].*|pass(?:word|wd)?|pwd|secret|token|changeme|redacted"
                               r"|none|null|undefined)", re.S)


def connection_password(value: str) -> bool:
    """The value of a connection string's ``Pwd=``: 6+ characters of any kind (a braced ODBC value may start with
    ``;`` or ``}``), not a whole placeholder (``$(DB_PASSWORD)``, ``<password>``), id, path or attribute without a
    digit (``settings.db_password``)."""
    return (len(value) >= 6 and not value.isspace() and not never(value) and not WHOLE_PLACEHOLDER.fullmatch(value)
            and not (REFERENCE.fullmatch(value) and NAME.fullmatch(value)))
