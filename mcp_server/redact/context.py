"""Secrets known by where they stand: the value of a secret-like name, in any notation an agent's session shows.

``password=…``, ``DB_PASSWORD="…"``, ``secret: …``, ``"api_key": "…"``, ``{'token': '…'}``, ``export FOO_SECRET=…``,
``?access_token=…&``, ``client_secret := …``, ``--hf-token …``, a connection string's password
(``Server=db;User Id=sa;Pwd=…;``: ODBC and ADO.NET, the value up to the next ``;``, or ``{…}``/quoted), and a
JSON object's ``"password"`` key in ``redact_value``. The names are matched case-insensitively (camelCase
``secretAccessKey`` included); what counts as the value of a password or of a token is decided in ``values.py``.
A 40-character base64 value of an AWS-like name (``AWS_SECRET_ACCESS_KEY``, ``SecretAccessKey``) is reported as
an AWS secret key.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from .values import connection_password, password_like, random_enough

SUFFIX = r"(?:s|key|keys|value|string|accesskey)?(?:[_.-][a-z0-9_.-]{0,40})?"
PASSWORD = (rf"(?:password|passwd|passphrase|passcode|contrasena){SUFFIX}"
            r"|(?<![a-z])(?:pass|pwd)(?![a-z0-9_.-])")
KEY_OWNERS = r"api|access|auth|private|client|account|service|signing|encryption|master|session|secret|db|database"
SECRET = rf"secret|token|credentials?|(?<![a-z])auth(?![a-z])|(?:{KEY_OWNERS})[_-]?keys?"
VALUE_CHARS = r"[^\s\"'`\\,;&<>(){}\[\]|]"
VALUE = rf"(?P<value>{VALUE_CHARS}{{1,256}})"
TAIL = re.compile(f"{VALUE_CHARS}*")  # a value longer than the pattern's bound (an AWS session token) goes whole
ASSIGNED = re.compile(  # matched where a stem occurs (``_starts``): the name, its closing quote, = or :, the value
    rf"(?:(?P<pw>{PASSWORD})|(?:{SECRET}){SUFFIX})(?:\\?[\"'\]]){{0,2}}[ \t]*(?::=|=>|=|:|%3d)(?!=)[ \t]*"
    rf"(?:\\?(?P<q>[\"'`]))?{VALUE}")
FLAG = re.compile(
    rf"--(?:[a-z0-9]+-)*(?:(?P<pw>password|passwd|pass)|token|secret|api-?key|key)(?:-[a-z0-9]+)*(?:=|[ \t]+)"
    rf"(?:(?P<q>[\"']))?(?!-){VALUE}")
STEMS = ("pass", "pwd", "contrasena", "secret", "token", "credential", "auth", "key")
KEY_OWNER = re.compile(rf"(?:{KEY_OWNERS})[_-]?\Z")
ANCHORS = ("password", "passwd", "passphrase", "passcode", "contrasena", "pass", "pwd", "secret", "token",
           "credential", "auth", "apikey", "api_key", "api-key", "_key", "-key", "accesskey", "privatekey",
           "clientkey", "accountkey", "servicekey", "signingkey", "encryptionkey", "masterkey", "sessionkey",
           "secretkey", "authkey", "dbkey", "databasekey")
AWS_SECRET = re.compile(r"(?:[A-Za-z0-9+/]|%2[BbFf]){40}")
SCHEME = re.compile(r"\s*(bearer|token|basic)\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})", re.I)
# a connection string's password: ``Pwd=``/``Password=`` as one of its ``;``-separated pairs (after a ``;``, or
# followed by ``;`` and the next pair); the value runs to the ``;`` (any character but white space), or is braced
# (ODBC, ``}}`` for a brace) or quoted (ADO.NET; also with JSON-escaped quotes, in a call's arguments as text)
CONNECTION = re.compile(
    r"(?<![a-z0-9_.-])(?:pwd|password|passwd)[ \t]*=[ \t]*(?:\{(?P<braced>(?:[^}]|\}\})*)\}(?=[ \t]*(?:;|$|[\s\"'\\]))"
    r"|\\?\"(?P<dq>[^\"\\]*)\\?\"|'(?P<sq>[^']*)'|(?P<plain>[^;\s\"'`\\]+))")
NEXT_PAIR = re.compile(r"[ \t]*;[ \t]*[a-z][a-z0-9 _]{0,40}=")
# a call, not a password: get_password(), cfg.get(KEY), getenv( before a quote; its name has no digit (a random
# password such as oHX6THTLhQ1(3Cj) is no call)
CALL = re.compile(r"[A-Za-z_][A-Za-z_.]*\((?:[\w., ]*\))?\Z")
NAME_KEY = re.compile(rf"[a-z0-9_. -]{{0,40}}?(?:(?P<pw>{PASSWORD})|(?:{SECRET}){SUFFIX})")


def kind_of(name: str, value: str, password: bool) -> str | None:
    """The kind of a secret found as the value of ``name`` (lower-cased), or None when it is not one."""
    if password:
        return "password" if password_like(value, quoted=True) else None
    if not random_enough(value):
        return None
    aws = ("aws" in name or "access" in name) and AWS_SECRET.fullmatch(value)
    return "aws_secret_key" if aws else "secret"


@functools.lru_cache(maxsize=4096)
def key_role(key: str) -> str | None:
    """What a JSON object's key says about its value: "header" (an Authorization header), "password", "secret"
    (any other secret-like name), or None. Cached: a trace repeats a handful of keys."""
    name = key.lower()
    if len(name) > 64:
        return None
    if name.endswith("authorization"):
        return "header"
    m = NAME_KEY.fullmatch(name)
    return None if m is None else "password" if m.group("pw") else "secret"


def key_secret(key: str, value: str) -> tuple[int, int, str] | None:
    """For a JSON object's member: (start, end, kind) of the secret ``value`` holds because of its key — all of
    it for ``"password"``, the credentials of an ``"Authorization"`` header — or None."""
    role = key_role(key)
    if role is None:
        return None
    if role == "header":
        m = SCHEME.match(value)
        if m is None:
            return None
        return m.start("secret"), m.end("secret"), "basic_auth" if m.group(1).lower() == "basic" else "bearer_token"
    kind = kind_of(key.lower(), value, role == "password")
    return (0, len(value), kind) if kind else None


def _starts(low: str) -> Iterator[int]:
    """Where a secret-like name may start: each occurrence of a stem (found with ``str.find``, far faster than a
    regular expression's alternation), backed up over the owner of a ``…_key``."""
    for stem in STEMS:
        i = low.find(stem)
        while i != -1:
            if stem != "key":
                yield i
            else:
                owner = KEY_OWNER.search(low, max(0, i - 12), i)
                if owner:
                    yield owner.start()
            i = low.find(stem, i + len(stem))


def _matches(low: str) -> Iterator[re.Match[str]]:
    for start in _starts(low):
        m = ASSIGNED.match(low, start)
        if m:
            yield m
    if "--" in low:
        yield from FLAG.finditer(low)


def _connection(text: str, low: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, "password") of each password of a ``;``-separated connection string."""
    for m in CONNECTION.finditer(low):
        group = next(g for g in ("braced", "dq", "sq", "plain") if m.group(g) is not None)
        before = m.start()
        while before and low[before - 1] in " \t":
            before -= 1
        if not ((before and low[before - 1] == ";") or NEXT_PAIR.match(low, m.end())):
            continue  # a lone ``password=…`` is the keyword rule's (``ASSIGNED``)
        start, end = m.span(group)
        value = text[start:end]
        if group == "plain" and CALL.match(value) and (value.endswith(")") or text[end:end + 1] in ("\"", "'", "`")):
            continue  # a call: Pwd=get_password(); Pwd=getenv("PWD");
        if connection_password(value.replace("}}", "}") if group == "braced" else value):
            yield start, end, "password"


def find(text: str, low: str, hits: set[str]) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of every value of a secret-like name in ``text`` (``low`` is its lower-cased copy)."""
    if hits.isdisjoint(ANCHORS):
        return
    for m in _matches(low):
        start = m.start("value")
        end = TAIL.match(text, m.end("value")).end()  # type: ignore[union-attr]
        value = text[start:end].rstrip(".")
        end = start + len(value)
        if low.startswith("(", end):  # a call: password=get_password()
            continue
        if m.start() and low[m.start() - 1] == ":" and low[m.start("value") - 1] == ":":
            continue  # an ARN or URN segment: arn:aws:secretsmanager:…:secret:NAME
        name = low[max(0, m.start() - 24):m.start("value")]
        if m.group("pw"):
            ok = password_like(value, quoted=bool(m.group("q")))
            kind = "password" if ok else None
        else:
            kind = kind_of(name, value, False)
        if kind:
            yield start, end, kind
    if ";" in low and not hits.isdisjoint(("pwd", "password", "passwd")):
        yield from _connection(text, low)
