"""Two-step approval for clients without elicitation (OpenCode): the first call gets a quote — a token bound to
a hash of the tool name, its full arguments and the quoted cost, and to the MCP session that asked; the second
call, made in that same session after a human said yes, passes the token back. Tokens are single-use, expire
after 10 minutes and live in the tunepack home.

In custodian mode (``tunepack serve --http --custodian``, run by the person under another OS account) a token
is only a quote number: it approves nothing until that account's person runs ``tunepack approve TOKEN``, which
the agent cannot, since it cannot open this database. A human's "no" to an elicitation voids every open quote
of that action."""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from pydantic import BaseModel

from ..errors import ApprovalError
from ..home import home_dir

TTL_S = 600
DIFFERENT = "The approval token was issued for different arguments or a different cost."
_AGAIN = ("call the tool again without approval_token to get a fresh quote, show it to the human, and pass the "
          "new token only after they approve.")


def _canonical(tool: str, arguments: dict, cost_usd: float) -> str:
    return json.dumps({"tool": tool, "arguments": arguments, "cost_usd": round(cost_usd, 6)},
                      sort_keys=True, separators=(",", ":"), default=str)


def action_hash(tool: str, arguments: dict, cost_usd: float) -> str:
    return hashlib.sha256(_canonical(tool, arguments, cost_usd).encode()).hexdigest()


def _shown(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "…"


def differences(quoted: str | None, tool: str, arguments: dict, cost_usd: float) -> str:
    """What differs between the quoted action (its canonical JSON) and this call, key by key: "labels (quoted {},
    now {"stage": "eval"})". Empty when the quote predates stored arguments."""
    if not quoted:
        return ""
    before = json.loads(quoted)
    now = json.loads(_canonical(tool, arguments, cost_usd))
    parts = [f"the tool ({before['tool']} quoted, now {now['tool']})"] if before["tool"] != now["tool"] else []
    old, new = before["arguments"], now["arguments"]
    parts += [f"{key} (quoted {_shown(old.get(key))}, now {_shown(new.get(key))})"
              for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
    if before["cost_usd"] != now["cost_usd"]:
        parts.append(f"the cost (quoted ${before['cost_usd']:.2f}, now ${now['cost_usd']:.2f})")
    return "; ".join(parts)


class Quote(BaseModel):
    """An open quote as ``tunepack approve --list`` shows it to the custodian."""

    token: str
    tool: str
    cost_usd: float
    summary: str
    expires_at: float
    approved: bool


class TokenStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else home_dir("approval") / "quotes.db"
        with closing(self._db()) as db, db:
            db.execute("CREATE TABLE IF NOT EXISTS quotes (token TEXT PRIMARY KEY, action TEXT NOT NULL, "
                       "tool TEXT NOT NULL, cost REAL NOT NULL, expires REAL NOT NULL, used REAL, "
                       "session TEXT NOT NULL DEFAULT '', summary TEXT NOT NULL DEFAULT '', approved REAL, "
                       "void TEXT)")
            if "arguments" not in {row[1] for row in db.execute("PRAGMA table_info(quotes)")}:
                db.execute("ALTER TABLE quotes ADD COLUMN arguments TEXT")  # what was quoted, to name a difference

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)

    def issue(self, tool: str, arguments: dict, cost_usd: float, now: float | None = None, *, session: str = "",
              summary: str = "") -> tuple[str, float]:
        token = "tp-approve-" + secrets.token_urlsafe(12)
        expires = (now or time.time()) + TTL_S
        with closing(self._db()) as db:
            db.execute("INSERT INTO quotes (token, action, tool, cost, expires, session, summary, arguments) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (token, action_hash(tool, arguments, cost_usd), tool, cost_usd, expires, session, summary,
                        _canonical(tool, arguments, cost_usd)))
        return token, expires

    def redeem(self, token: str, tool: str, arguments: dict, cost_usd: float, now: float | None = None, *,
               session: str = "", custodian: bool = False) -> None:
        """Consume the token for exactly this action in this session (in custodian mode: once the custodian
        approved it), or raise ApprovalError saying why not."""
        now = now or time.time()
        with closing(self._db()) as db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT action, expires, used, session, approved, void, arguments FROM quotes "
                             "WHERE token = ?", (token,)).fetchone()
            problem = _refusal(row and row[:6], action_hash(tool, arguments, cost_usd), now, session, custodian)
            if problem:
                db.execute("ROLLBACK")
                changed = problem == DIFFERENT and differences(row[6], tool, arguments, cost_usd)
                if changed:
                    problem = f"{problem[:-1]}: {changed}."
                raise ApprovalError(problem, _AGAIN if not custodian or changed else
                                    f"ask the human to approve it as the custodian: `tunepack approve {token}`; "
                                    "then call the tool again with the same arguments and this token.")
            db.execute("UPDATE quotes SET used = ? WHERE token = ?", (now, token))
            db.execute("COMMIT")

    def void(self, tool: str, arguments: dict, cost_usd: float, reason: str) -> int:
        """End every open quote of this action (the human declined it); how many were open."""
        with closing(self._db()) as db:
            return db.execute("UPDATE quotes SET void = ? WHERE action = ? AND used IS NULL AND void IS NULL",
                              (reason, action_hash(tool, arguments, cost_usd))).rowcount

    def approve(self, token: str, now: float | None = None) -> Quote:
        """The custodian's yes to one open quote."""
        now = now or time.time()
        with closing(self._db()) as db:
            n = db.execute("UPDATE quotes SET approved = ? WHERE token = ? AND used IS NULL AND void IS NULL "
                           "AND expires >= ?", (now, token, now)).rowcount
        if not n:
            raise ApprovalError(f"No open quote '{token[:40]}' (unknown, used, declined or expired).",
                                "list the open quotes with `tunepack approve --list` and approve one of them.")
        return next(q for q in self.open_quotes(now) if q.token == token)

    def open_quotes(self, now: float | None = None) -> list[Quote]:
        now = now or time.time()
        with closing(self._db()) as db:
            rows = db.execute("SELECT token, tool, cost, summary, expires, approved FROM quotes WHERE used IS NULL "
                              "AND void IS NULL AND expires >= ? ORDER BY expires", (now,)).fetchall()
        return [Quote(token=t, tool=tool, cost_usd=c, summary=s, expires_at=e, approved=a is not None)
                for t, tool, c, s, e, a in rows]


def _refusal(row, action: str, now: float, session: str, custodian: bool) -> str | None:
    if row is None:
        return "The approval token is not one this server issued."
    quoted, expires, used, quoted_session, approved, void = row
    if used is not None:
        return "The approval token was already used (tokens are single-use)."
    if void is not None:
        return f"The approval token's quote was ended: {void}."
    if now > expires:
        return "The approval token expired (tokens last 10 minutes)."
    if quoted != action:
        return DIFFERENT
    if quoted_session != session:
        return "The approval token was issued to another MCP session (a token is good only where it was quoted)."
    if custodian and approved is None:
        return "The custodian has not approved this quote yet."
    return None
