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

Usage:
    counts = Counter(); clean = redact_text(text, counts)
    clean_value = redact_value(json.loads(line), counts)   # every string inside; a "password" key's value too
    findings = find_secrets(text)                           # [Finding(start, end, kind), ...]
"""

from __future__ import annotations

from collections import Counter

from .context import key_role, key_secret
from .scan import KINDS, Finding, find_secrets, might_hold_secret

__all__ = ["KINDS", "Finding", "find_secrets", "might_hold_secret", "redact_messages", "redact_text", "redact_value"]


def marker(kind: str) -> str:
    return f"[REDACTED_{kind.upper()}]"


def redact_text(text: str, counts: Counter) -> str:
    """``text`` with every secret replaced by its marker; the replacements counted by kind into ``counts``."""
    findings = find_secrets(text)
    if not findings:
        return text
    parts, pos = [], 0
    for f in findings:
        parts += [text[pos:f.start], marker(f.kind)]
        counts[f.kind] += 1
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def _member(key, value, counts: Counter):
    if isinstance(value, str) and isinstance(key, str):
        clean = redact_text(value, counts)
        found = key_secret(key, value) if clean == value and key_role(key) else None
        if found:
            start, end, kind = found
            counts[kind] += 1
            return value[:start] + marker(kind) + value[end:]
        return clean
    return redact_value(value, counts)


def redact_value(value, counts: Counter):
    """Redact every string inside a JSON-like value; dict keys are kept, and the value of a secret-like key
    (``"password"``, ``"client_secret"``) is judged as such."""
    if isinstance(value, str):
        return redact_text(value, counts)
    if isinstance(value, dict):
        return {k: _member(k, v, counts) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v, counts) for v in value]
    return value


def redact_messages(messages: list[dict], counts: Counter) -> list[dict]:
    """Redact content, reasoning, tool-call arguments and tool results of TRL messages in place."""
    for message in messages:
        for key in ("content", "reasoning_content", "thinking"):
            if isinstance(message.get(key), str):
                message[key] = redact_text(message[key], counts)
        for call in message.get("tool_calls") or []:
            fn = call["function"]
            fn["arguments"] = redact_value(fn["arguments"], counts)
    return messages
