"""The twin's full-text index: tantivy (BM25), built once per dataset revision and kept on disk.

Documents are the rows of a split's export: all text of the row (string columns, and strings nested
in list/struct columns such as message contents) under one field, with ``row_idx`` as a fast field.
Words are lower-cased, English stop words dropped and stems kept (the service's DuckDB FTS index
uses the Porter stemmer and English stop words too). A query matches rows holding ANY of its words;
like the service, matches come back in dataset order (row_idx ascending), with the total count.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from .export import ROW_IDX

TEXT, ROW = "text", "row_idx"
ANALYZER = "tunepack_en"
WRITER_HEAP = 256_000_000
BATCH = 5000


def _tantivy():
    import tantivy

    return tantivy


def _analyzer():
    t = _tantivy()
    return (t.TextAnalyzerBuilder(t.Tokenizer.simple()).filter(t.Filter.remove_long(40))
            .filter(t.Filter.lowercase()).filter(t.Filter.stopword("english")).filter(t.Filter.stemmer("english"))
            .build())


def _schema():
    t = _tantivy()
    builder = t.SchemaBuilder()
    builder.add_integer_field(ROW, stored=False, indexed=False, fast=True)
    builder.add_text_field(TEXT, stored=False, tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


def build_index(cur, source: str, text_expr: str, out: Path) -> float:
    """Index every row of ``source`` (a DuckDB table expression) into the folder ``out`` (atomically);
    returns the seconds it took."""
    t = _tantivy()
    start = time.perf_counter()
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    index = t.Index(_schema(), path=str(tmp))
    index.register_tokenizer(ANALYZER, _analyzer())
    writer = index.writer(WRITER_HEAP, max(1, min(4, os.cpu_count() or 1)))
    result = cur.execute(f"SELECT {ROW_IDX}, {text_expr} FROM {source}")
    while batch := result.fetchmany(BATCH):
        for row_idx, text in batch:
            writer.add_document(t.Document(row_idx=int(row_idx), text=text or ""))
    writer.commit()
    writer.wait_merging_threads()
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return time.perf_counter() - start


class SearchIndex:
    """An opened index folder."""

    def __init__(self, path: Path):
        t = _tantivy()
        self.path = path
        self.index = t.Index.open(str(path))
        self.analyzer = _analyzer()
        self.index.register_tokenizer(ANALYZER, self.analyzer)
        self.schema = self.index.schema

    def search(self, query: str, offset: int, length: int) -> tuple[int, list[int]]:
        """(number of matching rows, row_idx of the page) for rows holding any word of ``query``."""
        t = _tantivy()
        terms = list(dict.fromkeys(self.analyzer.analyze(query)))
        if not terms:
            return 0, []
        clauses = [(t.Occur.Should, t.Query.term_query(self.schema, TEXT, term)) for term in terms]
        searcher = self.index.searcher()
        result = searcher.search(t.Query.boolean_query(clauses), limit=max(length, 1), count=True,
                                 order_by_field=ROW, order=t.Order.Asc, offset=offset)
        hits = [address for _, address in result.hits][:length]
        rows = searcher.fast_field_values(ROW, hits) if hits else []
        return int(result.count or 0), [int(r) for r in rows]
