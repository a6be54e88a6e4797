"""Let inspect-ai run with no network.

inspect-ai estimates token counts with tiktoken's ``o200k_base`` encoding, which tiktoken downloads
on first use; offline, every sample then fails ("Task interrupted (no samples completed)").
``ensure_token_counting()`` keeps the real encoding when it is cached or downloadable, and
otherwise registers an offline stand-in under the same name in tiktoken's registry (in memory
only; site-packages is untouched). The stand-in counts UTF-8 bytes of each pre-token, so it
over-counts by about 4× — harmless for single-turn code generation, where inspect uses the
count only for transcripts and context-compaction triggers.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading

ENCODING = "o200k_base"
BLOB = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
)


def cache_path() -> str:
    """Where tiktoken looks for the downloaded encoding (same rule as tiktoken.load)."""
    base = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    base = base or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.path.join(base, hashlib.sha1(BLOB.encode()).hexdigest())


def _download_works(timeout_s: float) -> bool:
    import tiktoken

    outcome: list[bool] = []

    def attempt() -> None:
        try:
            tiktoken.get_encoding(ENCODING)
            outcome.append(True)
        except Exception:  # noqa: BLE001 - any failure means: no usable download
            outcome.append(False)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(timeout_s)
    return bool(outcome and outcome[0])


def ensure_token_counting(try_download: bool | None = None, timeout_s: float = 5.0) -> str:
    """Make ``tiktoken.get_encoding('o200k_base')`` work; returns 'cached', 'downloaded' or 'offline'.

    ``try_download`` defaults to False when HF_HUB_OFFLINE/TUNEPACK_OFFLINE is set."""
    import tiktoken
    import tiktoken.registry

    if ENCODING in tiktoken.registry.ENCODINGS:
        return "cached"
    if os.path.isfile(cache_path()):
        return "cached"
    if try_download is None:
        try_download = not any(os.environ.get(v) for v in ("HF_HUB_OFFLINE", "TUNEPACK_OFFLINE"))
    if try_download and _download_works(timeout_s):
        return "downloaded"
    ranks = {bytes([i]): i for i in range(256)}
    encoding = tiktoken.Encoding(
        name=ENCODING, pat_str=PATTERN, mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 256, "<|endofprompt|>": 257},
    )
    with tiktoken.registry._lock:  # the registry's own lock; ENCODINGS is its documented cache
        tiktoken.registry.ENCODINGS[ENCODING] = encoding
    return "offline"
