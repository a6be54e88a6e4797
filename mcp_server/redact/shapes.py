"""Our own secret shapes: what detect-secrets (``library.py``) does not cover, or covers too narrowly.

Hugging Face tokens (also glued to the text before them: ``token%3Dhf_…``, ``xhf_…``), Anthropic keys, current
OpenAI keys (``sk-proj-…``; the library knows only the legacy ``…T3BlbkFJ…`` form), fine-grained GitHub tokens,
Google ``AIza`` keys, Stripe test and webhook secrets, Slack app and refresh tokens, npm tokens, whole PEM
private-key blocks (the library flags only the ``BEGIN`` line, never the key body; also URL-encoded or
base64-wrapped as in a Kubernetes secret), passwords in URLs (the library's pattern refuses ``!*'()`` in a
password and flags placeholders such as ``<password>``), and the token of an ``Authorization`` header.

Each rule names the anchors (lower-case substrings) without which it cannot match: ``scan.py`` runs a rule only
when one of them is in the text.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import NamedTuple

from .values import not_placeholder


def edged(prefix: str) -> str:
    """``prefix`` where a token starts: after a non-token character, or right after a %XX escape or a \\n-style
    escape (glued text). The look-behinds follow the literal, so that the search can skip to the literal."""
    p = re.escape(prefix)
    return rf"{p}(?:(?<![A-Za-z0-9_-]{p})|(?<=%[0-9A-Fa-f]{{2}}{p})|(?<=\\[nrt]{p}))"




class Rule(NamedTuple):
    kind: str
    anchors: tuple[str, ...]
    pattern: re.Pattern[str]
    lowered: bool = False  # matched against the lower-cased text (a case-insensitive rule)
    check: Callable[[str], bool] | None = None  # the secret's text must pass it


def _pem_in_base64(value: str) -> bool:
    try:
        head = base64.b64decode(value[:96] + "=" * (-len(value[:96]) % 4), validate=False)
    except (binascii.Error, ValueError):
        return False
    return b"PRIVATE KEY" in head


_SP = r"(?: |%20|\+)"
_LABEL = rf"(?:[A-Z0-9]+{_SP}){{0,3}}PRIVATE{_SP}KEY(?:{_SP}BLOCK)?-----"
_PEM = (rf"-----BEGIN{_SP}{_LABEL}(?:(?:[^-]|-(?!----)){{0,16384}}+-----END{_SP}{_LABEL}"
        r"|(?:(?:\s|\\[nr]|%0[AaDd])+(?:[A-Za-z0-9+/=]|%2[BbFf]|%3[Dd]){16,})+)")
_SECRET = "(?P<secret>"
RULES = (
    Rule("bearer_token", ("authorization",), re.compile(
        r"authorization\\?[\"']?\s*[:=]\s*\\?[\"']?\s*(?:bearer|token)\s+" + _SECRET + r"[a-z0-9._~+/=-]{8,})"),
        lowered=True),
    Rule("basic_auth", ("authorization",), re.compile(
        r"authorization\\?[\"']?\s*[:=]\s*\\?[\"']?\s*basic\s+" + _SECRET + r"[a-z0-9+/=]{8,})"), lowered=True),
    Rule("anthropic_key", ("sk-ant-",), re.compile(edged("sk-ant-") + r"[A-Za-z0-9_-]{16,}")),
    Rule("openai_key", ("sk-",), re.compile(
        edged("sk-") + r"(?!ant-)(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}")),
    Rule("hf_token", ("hf_",), re.compile(r"hf_(?=[A-Za-z0-9]*[A-Z0-9])[A-Za-z0-9]{30,}")),
    Rule("github_token", ("github_pat_",), re.compile(r"github_pat_(?=[A-Za-z0-9_]*[0-9])[A-Za-z0-9_]{40,}")),
    Rule("google_api_key", ("aiza",), re.compile(r"AIza[0-9A-Za-z_-]{35}")),
    Rule("stripe_key", ("k_test_", "whsec_"), re.compile(r"(?:[rs]k_test_|whsec_)[0-9A-Za-z]{24,}")),
    Rule("slack_token", ("xapp-", "xoxe-", "xoxe."), re.compile(r"(?:xapp|xoxe(?:\.xox[a-z])?)-\d-[A-Za-z0-9-]{20,}")),
    Rule("npm_token", ("npm_",), re.compile(edged("npm_") + r"[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    Rule("private_key", ("private key", "private%20key", "private+key"), re.compile(_PEM)),
    Rule("private_key", ("ls0tls1crudjti",), re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2}"),
         check=_pem_in_base64),
    Rule("url_password", ("://",), re.compile(
        r"://[^\s/?#@:\"'<>\\]{1,128}:" + _SECRET + r"[^\s/?#@\"'<>\\]{1,256})@"), check=not_placeholder),
)
