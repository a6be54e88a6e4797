"""A held-out split by session: no agent session (or conversation) has rows on both sides.

Converted agent traces carry ``source`` and ``session`` columns, and one session gives many rows (its turn
rows, windows, sidechains); a split on rows would put parts of one session in training and in evaluation.
Rows are grouped instead, and whole groups are held out:

    train_idx, heldout_idx, record = split(rows, 0.1, seed=42)   # record goes into the run manifest
    rows_to_score = select(rows, record)                          # later: the same held-out rows, verified

A group is a session (the file name of ``source`` + ``session``) where the row has one, else its conversation:
the opening messages (up to and including the first user message) of ``messages``, or of ``prompt`` for
prompt/completion rows, so the turn rows cut from one conversation stay together. Row hashes ignore ``None`` values and write
whole floats as integers, so rows read with ``json`` and rows read through ``datasets`` (Arrow fills missing
struct fields with None) hash the same.

Standard library only: the training script embeds this file verbatim beside the mask check, and the eval kit
carries it too. Errors are ``HeldoutError`` (a ValueError with ``problem`` and ``fix``, the shape of the kit's
``KitError``; the kit wraps it, the training script reports it as its error line).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable

HELDOUT_KINDS = {"session": "sessions", "conversation": "conversations"}


class HeldoutError(ValueError):
    """The held-out split cannot be made, or a recorded one no longer matches the data."""

    def __init__(self, problem: str, fix: str):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem} Fix: {fix}")


def heldout_plain(value: object) -> object:
    """``value`` without None entries in its objects, whole floats as ints (Arrow's view and json's agree)."""
    if isinstance(value, dict):
        return {str(k): heldout_plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [heldout_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def heldout_json(value: object) -> str:
    return json.dumps(heldout_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def row_sha256(row: dict) -> str:
    return hashlib.sha256(heldout_json(row).encode("utf-8")).hexdigest()


def heldout_opening(row: dict, messages_column: str = "messages") -> object:
    """The messages up to and including the first user message (all of them without one), a text prompt, or
    the whole row where it has neither (then the row is a group of its own)."""
    messages = row.get(messages_column)
    if not isinstance(messages, list):
        messages = row.get("prompt")
    if not isinstance(messages, list):
        return messages if isinstance(messages, str) else row
    for i, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return messages[:i + 1]
    return messages


def heldout_source_name(source: object) -> str:
    """The last part of a row's ``source`` path: the same on every machine, and no home folder in the manifest."""
    return re.split(r"[\\/]", str(source or "").rstrip("/\\"))[-1]


def group_key(row: dict, messages_column: str = "messages") -> str:
    """``session:["<source file name>","<session>"]`` for rows of an agent session, else ``conversation:<16 hex>``
    (a sha256 of the conversation's opening; ``messages_column`` names the conversation's column)."""
    session = row.get("session")
    if session not in (None, ""):
        return "session:" + json.dumps([heldout_source_name(row.get("source")), str(session)], ensure_ascii=False)
    digest = hashlib.sha256(heldout_json(heldout_opening(row, messages_column)).encode("utf-8")).hexdigest()
    return f"conversation:{digest[:16]}"


def heldout_digest(row_hashes: Iterable[str]) -> str:
    """Order-independent: the sha256 of the group's row hashes, sorted (duplicate rows count)."""
    return hashlib.sha256("\n".join(sorted(row_hashes)).encode("ascii")).hexdigest()


def group_sha256(rows: Iterable[dict]) -> str:
    """A content hash of one group's rows, independent of their order."""
    return heldout_digest(row_sha256(row) for row in rows)


def heldout_groups(rows: Iterable[dict], messages_column: str) -> tuple[list[str], dict[str, list[str]]]:
    """One pass over the rows: each row's group key, and each group's row hashes."""
    keys: list[str] = []
    hashes: dict[str, list[str]] = {}
    for row in rows:
        key = group_key(row, messages_column)
        keys.append(key)
        hashes.setdefault(key, []).append(row_sha256(row))
    return keys, hashes


def heldout_by(keys: Iterable[str]) -> str:
    kinds = {key.split(":", 1)[0] for key in keys}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def heldout_rank(seed: int, key: str) -> str:
    """A group's place in the draw: a hash, so adding sessions later keeps the others' order."""
    return hashlib.sha256(f"{seed}\n{key}".encode("utf-8")).hexdigest()


def heldout_names(key: str) -> set[str]:
    """The names a group answers to in data.eval_sessions: its session id, its source file's name and stem."""
    if not key.startswith("session:"):
        return {key}
    source, session = json.loads(key[len("session:"):])
    return {session, source, source.rsplit(".", 1)[0], key}


def _label(key: str) -> str:
    """``file stem (session id)`` for a session group, the key itself for a conversation."""
    if not key.startswith("session:"):
        return key
    source, session = json.loads(key[len("session:"):])
    return f"{source.rsplit('.', 1)[0]} ({session})"


def _named(hashes: dict[str, list[str]], names: list[str]) -> set[str]:
    chosen = {key for key in hashes if heldout_names(key) & set(names)}
    found = set().union(*(heldout_names(key) for key in chosen)) if chosen else set()
    missing = [n for n in names if n not in found]
    if missing:
        known = sorted(_label(key) for key in hashes)
        raise HeldoutError(f"data.eval_sessions names {', '.join(missing[:5])}, which no session of the data is.",
                           f"name sessions by file name or id, e.g. {', '.join(known[:6])}.")
    return chosen


def split(rows: Iterable[dict], fraction: float | None, seed: int, messages_column: str = "messages",
          names: list[str] | None = None) -> tuple[list[int], list[int], dict]:
    """(train indices, held-out indices, record): round(fraction x groups) whole groups held out (at least one,
    never all), or the groups ``names`` names; the same rows and seed give the same split, whatever the rows'
    order. When a few long sessions would take more than max(50 %, 2 x fraction) of the model turns, the draw is
    balanced instead: groups in the same seeded order, each taken while the held-out share of assistant turns
    stays within the fraction (the lightest group when none fits); the record says ``balanced``."""
    if not names and not (fraction and 0 < fraction < 1):
        raise HeldoutError(f"The held-out fraction {fraction} is not between 0 and 1.",
                           "set data.eval_fraction to a share such as 0.1.")
    rows = list(rows)
    keys, hashes = heldout_groups(rows, messages_column)
    by = heldout_by(hashes)
    balanced = False
    if len(hashes) < 2:
        what = "no rows" if not hashes else f"a single {by} ({len(keys)} rows)"
        raise HeldoutError(f"The training data holds {what}: holding out part of it for evaluation would put the "
                           "same session or conversation on both sides.",
                           "add more sessions or conversations to the data, or remove data.eval_fraction (with a "
                           "Hub dataset, data.eval_split names a separate split instead).")
    if names:
        chosen = _named(hashes, names)
        if len(chosen) == len(hashes):
            raise HeldoutError("data.eval_sessions names every session: none is left to train on.",
                               "name fewer sessions.")
    else:
        count = min(max(1, round((fraction or 0) * len(hashes))), len(hashes) - 1)
        ranked = sorted(hashes, key=lambda key: heldout_rank(seed, key))
        chosen = set(ranked[:count])
        weight = _turn_weights(rows, keys, messages_column)
        total = sum(weight.values())
        balanced = sum(weight[k] for k in chosen) > max(0.5, 2 * (fraction or 0)) * total
        if balanced:
            chosen, held = set(), 0
            for key in ranked:
                if held + weight[key] <= (fraction or 0) * total:
                    chosen.add(key)
                    held += weight[key]
            chosen = chosen or {min(ranked, key=lambda k: weight[k])}
    heldout = [i for i, key in enumerate(keys) if key in chosen]
    train = [i for i, key in enumerate(keys) if key not in chosen]
    groups = [{"id": key, "sha256": heldout_digest(hashes[key]), "rows": len(hashes[key])} for key in sorted(chosen)]
    record: dict = {"by": by, "fraction": fraction, "seed": seed, "groups": groups, "rows": len(heldout),
                    "total_groups": len(hashes), "messages_column": messages_column}
    if names:
        record["named"] = list(names)
    elif balanced:
        record["balanced"] = True
    return train, heldout, record


def _turn_weights(rows: Iterable[dict], keys: list[str], messages_column: str) -> dict[str, int]:
    """Each group's assistant messages (at least one per row): what a held-out share of "model turns" counts."""
    weight: dict[str, int] = {}
    for row, key in zip(rows, keys, strict=True):
        messages = row.get(messages_column)
        turns = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant") \
            if isinstance(messages, list) else 0
        weight[key] = weight.get(key, 0) + max(1, turns)
    return weight


def select(rows: Iterable[dict], record: dict, messages_column: str | None = None) -> list[dict]:
    """The held-out rows of a recorded split, in row order, once every recorded group is found unchanged
    (``messages_column``: the one the record names, else ``messages``)."""
    messages_column = messages_column or record.get("messages_column") or "messages"
    wanted = {group["id"]: group for group in record.get("groups") or []}
    if not wanted:
        raise HeldoutError("The held-out record names no groups.",
                           "pass manifest['heldout'] of a run trained with data.eval_fraction.")
    picked: list[dict] = []
    hashes: dict[str, list[str]] = {}
    for row in rows:
        key = group_key(row, messages_column)
        if key in wanted:
            picked.append(row)
            hashes.setdefault(key, []).append(row_sha256(row))
    for key, group in wanted.items():
        if key not in hashes:
            raise HeldoutError(f"The held-out {key} of the training run is not in the data any more.",
                               "the training data changed since the run: restore it (the files or Hub revision "
                               "the manifest names) or retrain.")
        if heldout_digest(hashes[key]) != group["sha256"]:
            raise HeldoutError(f"The rows of the held-out {key} changed since the training run ({len(hashes[key])} "
                               f"rows now, {group['rows']} then; their sha256 differs).",
                               "the training data changed since the run: restore it (the files or Hub revision "
                               "the manifest names) or retrain.")
    return picked


def heldout_line(record: dict) -> str:
    """``held out N sessions (M rows) for evaluation`` (conversations, or both, when that is what they are)."""
    count = len(record["groups"])
    noun = HELDOUT_KINDS.get(record["by"], "sessions or conversations")
    if count == 1:
        noun = noun[:-1] if record["by"] in HELDOUT_KINDS else "session or conversation"
    return f"held out {count} {noun} ({record['rows']} rows) for evaluation"
