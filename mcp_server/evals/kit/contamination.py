"""Did the training data contain the eval problems? N-gram overlap, as in the GPT-3 / PaLM checks.

    report = check_contamination(load_problems("mbpp", src), iter_training_texts(["train.jsonl"]))
    report.share, report.contaminated_ids

Text is normalised (whitespace collapsed, lower-cased) and split into word and punctuation tokens;
a problem is contaminated when at least half (``min_overlap``) of the ``n``-grams (default 13) of
its statement, of its reference solution or of its tests also occur in the training text — a
share rather than any single gram, because test lists and boilerplate statements share generic
13-grams across problems. A field shorter than ``n`` tokens counts
as one gram when it has at least ``min_tokens`` tokens (short one-line solutions are otherwise
invisible). Training rows are read from .jsonl/.json/.parquet files; every string in a row is
scanned (messages, tool calls, prompt/completion, any column).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import KitError
from .problems import Problem

TOKEN = re.compile(r"\w+|[^\w\s]")


def tokens(text: str) -> list[str]:
    return TOKEN.findall(" ".join(text.split()).lower())


def _key(toks: list[str]) -> bytes:
    return hashlib.blake2b("\x1f".join(toks).encode(), digest_size=8).digest()


def grams(text: str, n: int, min_tokens: int = 8) -> set[bytes]:
    toks = tokens(text)
    if len(toks) < n:
        return {_key(toks)} if len(toks) >= min_tokens else set()
    return {_key(toks[i : i + n]) for i in range(len(toks) - n + 1)}


@dataclass
class ContaminationReport:
    benchmark: str
    n_problems: int
    contaminated_ids: list[str] = field(default_factory=list)
    ngram: int = 13
    rows_scanned: int = 0

    @property
    def share(self) -> float:
        return len(self.contaminated_ids) / self.n_problems if self.n_problems else 0.0

    def to_dict(self) -> dict:
        return {
            "benchmark": self.benchmark, "n_problems": self.n_problems, "contaminated": len(self.contaminated_ids),
            "share": round(self.share, 4), "contaminated_ids": self.contaminated_ids[:50], "ngram": self.ngram,
            "rows_scanned": self.rows_scanned,
        }


class GramIndex:
    """The n-grams of each problem's statement, solution and tests, and which fields own each gram."""

    def __init__(self, problems: list[Problem], n: int = 13, min_tokens: int = 8) -> None:
        self.problems, self.n = problems, n
        self.owners: dict[bytes, set[tuple[int, int]]] = {}
        self.totals: dict[tuple[int, int], int] = {}
        self.short_sizes: set[int] = set()  # fields shorter than n are indexed whole: look for them at their size
        for i, p in enumerate(problems):
            for f, part in enumerate((p.text, p.solution, p.tests)):
                size = len(tokens(part))
                if min_tokens <= size < n:
                    self.short_sizes.add(size)
                field_grams = grams(part, n, min_tokens)
                self.totals[(i, f)] = len(field_grams)
                for g in field_grams:
                    self.owners.setdefault(g, set()).add((i, f))

    def seen(self, text: str) -> set[bytes]:
        """The indexed grams that occur in ``text``."""
        toks, found = tokens(text), set()
        for size in (self.n, *sorted(self.short_sizes)):
            for j in range(max(0, len(toks) - size + 1)):
                key = _key(toks[j : j + size])
                if key in self.owners:
                    found.add(key)
        return found

    def flagged(self, seen: set[bytes], min_overlap: float) -> set[tuple[int, int]]:
        """The fields (problem, part) with at least ``min_overlap`` of their grams in ``seen``."""
        found: dict[tuple[int, int], int] = {}
        for key in seen:
            for owner in self.owners[key]:
                found[owner] = found.get(owner, 0) + 1
        return {owner for owner, k in found.items() if k / self.totals[owner] >= min_overlap}


def check_contamination(
    problems: list[Problem], texts: Iterable[str], n: int = 13, min_tokens: int = 8, min_overlap: float = 0.5
) -> ContaminationReport:
    """A problem is contaminated when, for its statement, its solution or its tests, at least
    ``min_overlap`` of that field's n-grams occur in the training text (1.0 = verbatim copy)."""
    index = GramIndex(problems, n, min_tokens)
    seen: set[bytes] = set()
    rows = 0
    for text in texts:
        rows += 1
        seen |= index.seen(text)
    hit = sorted({i for i, _ in index.flagged(seen, min_overlap)})
    bench = problems[0].benchmark if problems else ""
    ids = [problems[i].id for i in hit]
    return ContaminationReport(benchmark=bench, n_problems=len(problems), contaminated_ids=ids, ngram=n, rows_scanned=rows)


def overlapping_rows(problems: list[Problem], texts: list[str], n: int = 13, min_tokens: int = 8,
                     min_overlap: float = 0.5) -> tuple[list[int], list[str]]:
    """The rows to leave out so the rest contaminate none of ``problems`` under check_contamination's rule, and
    the problem ids they touched: for each flagged field, the row holding most of its grams goes, until nothing
    is flagged (a row that shares one generic gram with a problem stays)."""
    index = GramIndex(problems, n, min_tokens)
    per_row = [index.seen(t) for t in texts]
    kept, dropped, touched = set(range(len(texts))), set(), set()
    while kept:
        fields = index.flagged(set().union(*(per_row[r] for r in kept)), min_overlap)
        if not fields:
            break
        touched |= {i for i, _ in fields}
        for owner in fields:
            dropped.add(max(kept, key=lambda r: (sum(owner in index.owners[g] for g in per_row[r]), -r)))
        kept -= dropped
    return sorted(dropped), [problems[i].id for i in sorted(touched)]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _hub_rows(ref: str) -> Iterator[dict]:
    from datasets import load_dataset

    ref, _, split = ref.partition("#")
    repo, _, revision = ref.partition("@")
    try:
        rows = load_dataset(repo, revision=revision or None, split=split or "train", streaming=True)
    except Exception as exc:  # noqa: BLE001 - network, auth or missing repo: the same next step
        raise KitError(
            f"Could not read the training dataset {repo} ({type(exc).__name__}).",
            "check HF_TOKEN and the dataset id, or run with allow_contaminated knowingly.",
        ) from exc
    yield from rows


def iter_training_texts(paths: Iterable[str]) -> Iterator[str]:
    """One text per training row (all its strings joined), from jsonl/json/parquet files or folders."""
    for row in iter_training_rows(paths, raw_lines=True):
        yield row if isinstance(row, str) else "\n".join(_strings(row))


def _files(paths: Iterable[str]) -> Iterator[Path | str]:
    """The files of ``paths`` (folders walked), hub refs passed through as strings."""
    for raw in paths:
        p = Path(raw)
        if raw.startswith("hub:"):  # hub:namespace/name[@revision][#split]
            yield raw
        elif p.is_dir():
            yield from sorted(f for f in p.rglob("*") if f.suffix in (".jsonl", ".json", ".parquet"))
        elif p.is_file():
            yield p
        else:
            raise KitError(f"Training data '{raw}' does not exist.",
                           "pass the files the adapter was trained on (the run manifest lists them).")


def iter_training_rows(paths: Iterable[str], raw_lines: bool = False) -> Iterator:
    """The training rows as dicts, in file order (``raw_lines``: a jsonl line that is not JSON as its text)."""
    for f in _files(paths):
        if isinstance(f, str):
            yield from _hub_rows(f[4:])
        elif f.suffix == ".parquet":
            import pyarrow.parquet as pq

            for batch in pq.ParquetFile(f).iter_batches(batch_size=512):
                yield from batch.to_pylist()
        elif f.suffix == ".json":
            data = json.loads(f.read_text(encoding="utf-8"))
            yield from (data if isinstance(data, list) else [data])
        else:
            yield from _jsonl(f, raw_lines)


def _jsonl(path: Path, raw_lines: bool) -> Iterator:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                if not raw_lines:
                    raise KitError(f"A line of {path} is not JSON.", "fix or remove that line of the training "
                                   "data; the eval reads the rows the run trained on.") from None
                yield line
