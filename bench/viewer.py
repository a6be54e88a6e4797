"""Benchmark the local Datasets Viewer twin against the `datasets` library (prints figures; asserts nothing).

One run generates N trace-like rows (a `messages` column of system/user/assistant-tool-call/tool/assistant
turns with about 1 KB of text per row, plus `source`, `score`, `n_turns`) into a temp dir as Parquet (DuckDB
writes it), reports the file size, then measures on the twin (`TwinViewer`, index under the temp dir):

- prepare: the one-time Parquet export of the split, and the one-time tantivy search index build;
- /rows: 100 rows at random offsets; /filter: `"source" = 'beta' AND "score" > x` with a new x each call (so
  each call counts its matches), `"source" = 'beta' AND "score" > 50` at random page offsets (paging: the
  count is remembered), and the same ordered by `"score" DESC` (100 rows scattered over the split);
  /search: a rare term (10 rows) and a common term (half the rows); 100 rows per page everywhere;

and the same questions with `datasets` in the same run: `load_dataset("parquet", ...)` (its Arrow
conversion), `ds.select(range(offset, offset + 100))` for rows, a batched `ds.filter` on the two columns
(+ `.sort` for the ordered variant) for filter, and a batched `ds.filter` doing a substring test over the
message contents for search. p50/p95 per query in milliseconds, and the twin's speed-up.

Targets: rows p50 ≤ 20 ms, filter ≤ 200 ms, search ≤ 1 s, filter ≥ 20× faster than `datasets`.

Usage:
    python bench/viewer.py                 # 1,000,000 rows (~1 GB of text; several minutes, ~3 GB of temp disk)
    python bench/viewer.py --quick         # 20,000 rows (CI smoke, well under a minute)
    python bench/viewer.py --rows 200000   # any size; --no-datasets skips the comparison
"""

from __future__ import annotations

import argparse
import warnings
import itertools
import math
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RARE, COMMON = "zyzzyva", "error"
WHERE, ORDERBY = "\"source\" = 'beta' AND \"score\" > 50", '"score" DESC'


def generate(path: Path, n: int) -> None:
    """N trace-like rows written by DuckDB: words drawn log-uniformly from a 4,000-word vocabulary, RARE in
    10 rows, COMMON in every other row's tool output."""
    import duckdb

    syllables = ["ka", "ro", "mi", "te", "lu", "pa", "shi", "no", "ve", "dra", "qui", "bo", "zen", "fa", "gol", "ti"]
    words = ["".join(p) for p in itertools.product(syllables, repeat=3)][:4000]
    rare_every = max(n // 10, 1)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute("SELECT setseed(0.42)")
    con.execute("CREATE TABLE vocab AS SELECT ?::VARCHAR[] AS words", [words])

    def text(count: str) -> str:
        return (f"array_to_string(list_transform(range({count}), lambda x: v.words[(pow(4000, random()))::INT]), "
                "' ')")

    con.execute(f"""
        COPY (
          SELECT i AS id, ['alpha', 'beta', 'gamma', 'delta'][(i % 4) + 1] AS source,
                 round(random() * 100, 2) AS score, 5 AS n_turns,
                 [{{'role': 'system', 'content': 'You are a coding agent.', 'tool_calls': NULL}},
                  {{'role': 'user', 'content': {text('40 + (i % 30)')} ||
                      CASE WHEN i % {rare_every} = 7 THEN ' {RARE}' ELSE '' END, 'tool_calls': NULL}},
                  {{'role': 'assistant', 'content': '', 'tool_calls': [{{'type': 'function', 'function': {{
                      'name': ['bash', 'read_file', 'grep'][(i % 3) + 1],
                      'arguments': '{{"command": "ls -la"}}'}}}}]}},
                  {{'role': 'tool', 'content': {text('60')} ||
                      CASE WHEN i % 2 = 0 THEN ' {COMMON}' ELSE '' END, 'tool_calls': NULL}},
                  {{'role': 'assistant', 'content': {text('40')}, 'tool_calls': NULL}}] AS messages
          FROM range({n}) t(i), vocab v
        ) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 20000)""")


def timed(fn, reps: int) -> tuple[float, float, object]:
    """p50 and p95 in ms over ``reps`` calls, and the last result."""
    times, result = [], None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return times[len(times) // 2], times[max(0, math.ceil(0.95 * len(times)) - 1)], result


def line(name: str, p50: float, p95: float, extra: str = "") -> None:
    print(f"  {name:<34} p50 {p50:9.1f} ms   p95 {p95:9.1f} ms  {extra}")


def bench_twin(path: Path, index: Path, n: int, reps: dict) -> dict:
    from mcp_server.viewer.twin import TwinViewer

    twin, ds, rng = TwinViewer(index_root=index), str(path), random.Random(1)
    start = time.perf_counter()
    state = twin.split_state(ds, "default", "train")
    prepare = time.perf_counter() - start
    _, build = twin.search_index(ds, "default", "train")
    index_mb = sum(f.stat().st_size for f in (state.folder / f"{state.stem}.search").iterdir()) / 1e6
    print(f"twin: export {prepare:.1f} s ({state.info.num_bytes_parquet_files / 1e6:.0f} MB parquet in "
          f"{len(state.info.parts)} parts), search index build {build:.1f} s ({index_mb:.0f} MB, tantivy BM25)")
    out = {}
    out["rows"] = timed(lambda: twin.rows(ds, "default", "train", rng.randrange(n - 100), 100), reps["rows"])
    # a where never seen before pays the count of all matches; paging the same where reuses that count
    out["filter (new where)"] = timed(lambda: twin.filter(
        ds, "default", "train", f"\"source\" = 'beta' AND \"score\" > {rng.uniform(45, 55):.4f}", None, 0, 100),
        reps["filter"])
    total = twin.filter(ds, "default", "train", WHERE, None, 0, 0).num_rows_total
    deep = max(1, min(total - 100, 10000))
    out["filter (paging)"] = timed(lambda: twin.filter(ds, "default", "train", WHERE, None, rng.randrange(deep), 100),
                                   reps["filter"])
    out["filter+orderby"] = timed(lambda: twin.filter(ds, "default", "train", WHERE, ORDERBY, rng.randrange(deep),
                                                      100), reps["filter"])
    out["search rare"] = timed(lambda: twin.search(ds, "default", "train", RARE, 0, 100), reps["search"])
    out["search common"] = timed(lambda: twin.search(ds, "default", "train", COMMON, 0, 100), reps["search"])
    for name, (p50, p95, page) in out.items():
        line(name, p50, p95, f"({page.num_rows_total} rows match)" if "rows" != name else "")
    return out


def bench_datasets(path: Path, cache: Path, n: int, reps: dict) -> dict:
    import datasets

    datasets.disable_progress_bars()
    warnings.filterwarnings("ignore", category=FutureWarning)  # pyarrow sort options, inside datasets
    datasets.logging.set_verbosity_error()
    start = time.perf_counter()
    ds = datasets.load_dataset("parquet", data_files=str(path), split="train", cache_dir=str(cache))
    print(f"datasets {datasets.__version__}: load_dataset {time.perf_counter() - start:.1f} s "
          f"({sum(f.stat().st_size for f in cache.rglob('*.arrow')) / 1e6:.0f} MB arrow cache)")
    rng, kw = random.Random(1), {"batched": True, "batch_size": 10000, "keep_in_memory": True,
                                 "load_from_cache_file": False}

    def where(batch_source, batch_score):
        return [s == "beta" and sc > 50 for s, sc in zip(batch_source, batch_score)]

    def page(subset, offset=0):
        return subset.select(range(offset, min(offset + 100, len(subset)))).to_list(), len(subset)

    def search(term):
        def match(batch):
            return [any(term in (m["content"] or "") for m in messages) for messages in batch]
        return page(ds.filter(match, input_columns=["messages"], **kw))

    out = {}
    out["rows"] = timed(lambda: page(ds, rng.randrange(n - 100)), reps["rows"])
    out["filter"] = timed(lambda: page(ds.filter(where, input_columns=["source", "score"], **kw)), reps["filter"])
    out["filter+orderby"] = timed(lambda: page(ds.filter(where, input_columns=["source", "score"], **kw)
                                               .sort("score", reverse=True)), reps["filter"])
    out["search rare"] = timed(lambda: search(RARE), reps["search"])
    out["search common"] = timed(lambda: search(COMMON), reps["search"])
    for name, (p50, p95, result) in out.items():
        line(name, p50, p95, f"({result[1]} rows match)" if name != "rows" else "")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 rows and fewer repetitions (CI)")
    parser.add_argument("--rows", type=int, help="rows to generate (default 1,000,000; 20,000 with --quick)")
    parser.add_argument("--no-datasets", action="store_true", help="skip the datasets comparison")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    n = args.rows or (20_000 if args.quick else 1_000_000)
    twin_reps = {"rows": 30, "filter": 10, "search": 10} if args.quick else {"rows": 100, "filter": 20, "search": 20}
    hf_reps = {"rows": 10, "filter": 3, "search": 2} if args.quick else {"rows": 20, "filter": 3, "search": 1}
    tmp = Path(tempfile.mkdtemp(prefix="tunepack-bench-viewer-"))
    try:
        path = tmp / "traces.parquet"
        start = time.perf_counter()
        generate(path, n)
        import duckdb

        text_bytes = duckdb.sql(f"SELECT avg(len(list_reduce(list_transform(messages, lambda m: m.content), "
                                f"lambda a, b: a || b))) FROM '{path}'").fetchall()[0][0]
        print(f"data: {n:,} rows, {path.stat().st_size / 1e6:.0f} MB parquet, {text_bytes:.0f} B of message text per "
              f"row (mean), generated in {time.perf_counter() - start:.1f} s")
        twin = bench_twin(path, tmp / "index", n, twin_reps)
        if not args.no_datasets:
            hf = bench_datasets(path, tmp / "hf-cache", n, hf_reps)
            print("speed-up of the twin over datasets (p50):")
            for name in twin:
                theirs = hf[name.split(" (")[0]][0]
                print(f"  {name:<34} {theirs / max(twin[name][0], 1e-6):8.1f}×")
        print("targets: rows p50 ≤ 20 ms, filter ≤ 200 ms, search ≤ 1000 ms, filter ≥ 20× datasets")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
