"""The /filter language, checked by a tokenizer and a parser before any SQL is built.

The service documents ``where`` as SQL conditions on double-quoted columns and ``orderby`` as
double-quoted columns with ASC/DESC. The twin accepts exactly this grammar and nothing else:

    where     := or
    or        := and ("OR" and)*
    and       := not ("AND" not)*
    not       := "NOT" not | "(" or ")" | operand (cmp operand | "IS" ["NOT"] "NULL")
    operand   := "column" | 'string' | number | TRUE | FALSE
    cmp       := = | != | <> | < | <= | > | >=
    orderby   := "column" [ASC|DESC] ("," "column" [ASC|DESC])*

The SQL handed to DuckDB is re-emitted from the parsed tokens: identifiers re-quoted after checking
them against the real column names, strings re-escaped, numbers as matched. Function calls,
subqueries, ``;`` and comments never reach DuckDB: they fail here with InvalidParameter.

Bounds (``check_bounds``, for both backends): at most ``MAX_LENGTH`` characters, ``MAX_DEPTH`` nested
parentheses / NOTs and ``MAX_ORDER_COLUMNS`` sort columns; beyond them one InvalidParameter naming the
limit, never a RecursionError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .backend import INVALID_PARAMETER, WHERE_HELP, ViewerError
from .features import quote

_TOKEN = re.compile(r"""\s*(?:
    (?P<ident>"(?:[^"]|"")*")
  | (?P<string>'(?:[^']|'')*')
  | (?P<number>-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?![A-Za-z_0-9.])
  | (?P<op><>|!=|<=|>=|=|<|>)
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<comma>,)
  | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
)""", re.VERBOSE)
MAX_LENGTH = 4096  # characters of a where or an orderby
MAX_DEPTH = 64  # nested parentheses and NOTs in a where
MAX_ORDER_COLUMNS = 64
ECHO = 200  # characters of the text an error quotes
KEYWORDS = {"AND", "OR", "NOT", "IS", "NULL", "TRUE", "FALSE", "ASC", "DESC"}
SQL_WORDS = {"SELECT", "FROM", "UNION", "DROP", "INSERT", "UPDATE", "DELETE", "CREATE", "ATTACH", "COPY", "PRAGMA",
             "WITH", "EXISTS", "IN", "LIKE", "ILIKE", "BETWEEN", "CASE", "CAST", "SET", "CALL", "INSTALL", "LOAD"}


@dataclass
class Token:
    kind: str
    text: str
    pos: int


def _reject(param: str, text: str, why: str, columns: list[str]) -> ViewerError:
    shown = ", ".join(quote(c) for c in columns[:30])
    quoted = repr(text) if len(text) <= ECHO else repr(text[:ECHO]) + f"… ({len(text)} characters)"
    return ViewerError(f"Parameter '{param}' is invalid: {why} (in {quoted}).",
                       f"{WHERE_HELP}. Columns: {shown}.", INVALID_PARAMETER)


def _too_big(param: str, what: str, fix: str) -> ViewerError:
    return ViewerError(f"Parameter '{param}' is too big: {what}.", fix, INVALID_PARAMETER)


def _too_deep(param: str) -> ViewerError:
    return _too_big(param, f"it nests parentheses and NOTs more than {MAX_DEPTH} levels deep (the limit is "
                           f"{MAX_DEPTH} levels)",
                    "flatten it: A AND (B AND (C)) is A AND B AND C, NOT NOT x is x; or split it into several calls.")


def _paren_depth(text: str) -> int:
    """The deepest nesting of parentheses outside quoted strings and names."""
    depth = deepest = 0
    quote_char = ""
    for char in text:
        if quote_char:
            quote_char = "" if char == quote_char else quote_char  # a doubled quote re-opens on the next char
        elif char in "'\"":
            quote_char = char
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth = max(0, depth - 1)
    return deepest


def check_bounds(text: str, param: str) -> None:
    """InvalidParameter naming the limit when ``text`` is longer than MAX_LENGTH or nested deeper than MAX_DEPTH."""
    if len(text) > MAX_LENGTH:
        raise _too_big(param, f"it is {len(text):,} characters long (the limit is {MAX_LENGTH} characters)",
                       "use a shorter condition: fewer comparisons per call (several filter calls, or a column that "
                       "already holds the grouping), no redundant parentheses.")
    if _paren_depth(text) > MAX_DEPTH:
        raise _too_deep(param)


def tokenize(text: str, param: str, columns: list[str]) -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        match = _TOKEN.match(text, pos)
        if not match:
            at = len(text) - len(text[pos:].lstrip())
            char, pair = text[at], text[at:at + 2]
            why = {";": "';' is not allowed (one condition only)", "'": "a string is not closed with '",
                   '"': "a column name is not closed with \""}.get(char, f"unexpected character {char!r}")
            if pair in ("--", "/*", "*/"):
                why = f"comments ({pair}) are not allowed"
            raise _reject(param, text, f"{why} at position {at}", columns)
        kind = match.lastgroup or ""
        value = match.group(kind)
        tokens.append(Token(kind, value, match.start(kind)))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str, param: str, columns: list[str], used: set[str] | None = None):
        self.text, self.param, self.columns = text, param, columns
        self.used = used if used is not None else set()
        check_bounds(text, param)
        self.tokens = tokenize(text, param, columns)
        self.i = 0
        self.depth = 0  # open parentheses and NOTs around the current condition

    def fail(self, why: str) -> ViewerError:
        return _reject(self.param, self.text, why, self.columns)

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def word(self, *names: str) -> bool:
        tok = self.peek()
        if tok and tok.kind == "word" and tok.text.upper() in names:
            self.i += 1
            return True
        return False

    def column(self, tok: Token) -> str:
        name = tok.text[1:-1].replace('""', '"')
        if name not in self.columns:
            close = [c for c in self.columns if c.lower() == name.lower()]
            hint = f"; did you mean {quote(close[0])}?" if close else ""
            raise self.fail(f"unknown column {quote(name)}{hint}")
        self.used.add(name)
        return quote(name)

    def bad_word(self, tok: Token) -> ViewerError:
        upper = tok.text.upper()
        nxt = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
        if upper in SQL_WORDS:
            return self.fail(f"SQL keyword {upper} is not allowed (no subqueries, IN, LIKE, BETWEEN)")
        if nxt and nxt.kind == "lparen" and upper not in KEYWORDS:
            return self.fail(f"function calls are not allowed ({tok.text}(...) at position {tok.pos})")
        if upper in KEYWORDS:
            return self.fail(f"unexpected {upper} at position {tok.pos}")
        return self.fail(f"column names must be double-quoted: write \"{tok.text}\" (position {tok.pos})")

    def operand(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.fail("the condition ends too early: a value is missing")
        self.i += 1
        if tok.kind == "ident":
            return self.column(tok)
        if tok.kind == "string":
            return "'" + tok.text[1:-1].replace("''", "'").replace("'", "''") + "'"
        if tok.kind == "number":
            return tok.text
        if tok.kind == "word" and tok.text.upper() in ("TRUE", "FALSE"):
            return tok.text.upper()
        if tok.kind == "word" and tok.text.upper() == "NULL":
            raise self.fail("compare with NULL using IS NULL or IS NOT NULL")
        if tok.kind == "word":
            self.i -= 1
            raise self.bad_word(tok)
        if tok.kind == "lparen":
            raise self.fail(f"a value cannot be a parenthesised expression or subquery (position {tok.pos})")
        raise self.fail(f"expected a \"column\", a 'string' or a number at position {tok.pos}, got {tok.text!r}")

    def nested(self, levels: int) -> None:
        self.depth += levels
        if self.depth > MAX_DEPTH:
            raise _too_deep(self.param)

    def condition(self) -> str:
        tok = self.peek()
        if tok and tok.kind == "lparen":
            self.i += 1
            self.nested(1)
            inner = self.disjunction()
            self.depth -= 1
            close = self.peek()
            if not close or close.kind != "rparen":
                raise self.fail("a '(' is not closed")
            self.i += 1
            return f"({inner})"
        left = self.operand()
        tok = self.peek()
        if tok and tok.kind == "op":
            self.i += 1
            return f"{left} {tok.text} {self.operand()}"
        if self.word("IS"):
            negate = self.word("NOT")
            if not self.word("NULL"):
                raise self.fail("IS must be followed by NULL or NOT NULL")
            return f"{left} IS {'NOT ' if negate else ''}NULL"
        if tok is None:
            raise self.fail("a comparison is missing after the last value (e.g. = 'x' or IS NULL)")
        if tok.kind == "word":
            raise self.bad_word(tok)
        raise self.fail(f"expected a comparison (= != <> < <= > >=) or IS [NOT] NULL at position {tok.pos}")

    def negation(self) -> str:
        count = 0
        while self.word("NOT"):
            count += 1
        self.nested(count)
        inner = self.condition()
        self.depth -= count
        return "NOT " * count + inner

    def conjunction(self) -> str:
        parts = [self.negation()]
        while self.word("AND"):
            parts.append(self.negation())
        return " AND ".join(parts)

    def disjunction(self) -> str:
        parts = [self.conjunction()]
        while self.word("OR"):
            parts.append(self.conjunction())
        return " OR ".join(parts)


def parse_where(text: str, columns: list[str], used: set[str] | None = None) -> str:
    """The checked SQL condition for ``where`` (InvalidParameter when it is outside the grammar); the
    columns it names are added to ``used``."""
    parser = _Parser(text, "where", columns, used)
    if not parser.tokens:
        raise parser.fail("it is empty")
    sql = parser.disjunction()
    extra = parser.peek()
    if extra is not None:
        if extra.kind == "word":
            raise parser.bad_word(extra)
        raise parser.fail(f"unexpected {extra.text!r} at position {extra.pos}")
    return sql


def parse_orderby(text: str, columns: list[str], used: set[str] | None = None) -> str:
    """The checked ORDER BY list for ``orderby``: "col" [ASC|DESC], ..."""
    parser = _Parser(text, "orderby", columns, used)
    items = []
    while True:
        tok = parser.peek()
        if tok is None or tok.kind != "ident":
            if tok is not None and tok.kind == "word":
                raise parser.bad_word(tok)
            raise parser.fail("expected a double-quoted column name" + (f" at position {tok.pos}" if tok else ""))
        parser.i += 1
        item = parser.column(tok)
        if parser.word("DESC"):
            item += " DESC"
        elif parser.word("ASC"):
            item += " ASC"
        items.append(item)
        if len(items) > MAX_ORDER_COLUMNS:
            raise _too_big("orderby", f"it sorts by more than {MAX_ORDER_COLUMNS} columns (the limit is "
                                      f"{MAX_ORDER_COLUMNS} columns)", "sort by the few columns that decide the order.")
        tok = parser.peek()
        if tok is None:
            return ", ".join(items)
        if tok.kind != "comma":
            if tok.kind == "word":
                raise parser.bad_word(tok)
            raise parser.fail(f"expected ',' or the end at position {tok.pos}, got {tok.text!r}")
        parser.i += 1
