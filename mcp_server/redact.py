"""Secret redaction: replace credentials in any text before it is written as training data.

Covers Hugging Face tokens (``hf_…``), Anthropic keys (``sk-ant-…``), OpenAI keys (``sk-…``,
``sk-proj-…``), GitHub tokens (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``, ``github_pat_…``), AWS access key
ids (``AKIA…``/``ASIA…``) and the token of an ``Authorization: Bearer …`` header. A match becomes a
marker such as ``[REDACTED_HF_TOKEN]``; the header keeps its name (``Authorization: Bearer
[REDACTED_BEARER_TOKEN]``). Counts per kind (``KINDS``) go to the caller's ``Counter``: the conversion's
stats report and ``tunepack traces push``'s redaction report use the same patterns.

Usage:
    counts = Counter(); clean = redact_text(text, counts)
    clean_value = redact_value(json.loads(line), counts)   # raw session lines: every string inside
"""

from __future__ import annotations

import re
from collections import Counter

_EDGE = r"(?<![A-Za-z0-9_-])"
_PATTERNS = [
    ("anthropic_key", _EDGE + r"sk-ant-[A-Za-z0-9_-]{16,}"),
    ("openai_key", _EDGE + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("hf_token", _EDGE + r"hf_[A-Za-z0-9]{30,}"),
    ("github_token", _EDGE + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("aws_access_key", _EDGE + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"),
]
_BEARER = r"(?P<bearer_head>(?i:\bauthorization\s*[:=]\s*[\"']?\s*bearer\s+))(?P<bearer>[A-Za-z0-9._~+/=-]{8,})"
_ALL = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _PATTERNS) + "|" + _BEARER)
_QUICK = re.compile(r"sk-|hf_|gh[pousr]_|github_pat_|AKIA|ASIA|(?i:bearer)")
KINDS = tuple(kind for kind, _ in _PATTERNS) + ("bearer_token",)


def might_hold_secret(text: str) -> bool:
    """A cheap pre-check: False means ``redact_text`` would change nothing (also true of JSON-encoded text, since
    JSON never escapes the ASCII characters the check looks for)."""
    return bool(text) and _QUICK.search(text) is not None


def _replace(counts: Counter):
    def sub(match: re.Match) -> str:
        if match.group("bearer"):
            counts["bearer_token"] += 1
            return match.group("bearer_head") + "[REDACTED_BEARER_TOKEN]"
        kind = match.lastgroup or "secret"
        counts[kind] += 1
        return f"[REDACTED_{kind.upper()}]"
    return sub


def redact_text(text: str, counts: Counter) -> str:
    if not might_hold_secret(text):
        return text
    return _ALL.sub(_replace(counts), text)


def redact_value(value, counts: Counter):
    """Redact every string inside a JSON-like value (dict keys are left alone)."""
    if isinstance(value, str):
        return redact_text(value, counts)
    if isinstance(value, dict):
        return {k: redact_value(v, counts) for k, v in value.items()}
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
