"""Two-step approval for clients without elicitation (OpenCode): the first call gets a token bound
to a hash of the tool name, its full arguments and the quoted cost; the second call, made after a
human said yes, passes the token back. Tokens are single-use, expire after 10 minutes, and live in
the tunepack home so a restarted stdio server still honours them."""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from ..errors import ApprovalError
from ..home import home_dir

TTL_S = 600


def action_hash(tool: str, arguments: dict, cost_usd: float) -> str:
    canonical = json.dumps({"tool": tool, "arguments": arguments, "cost_usd": round(cost_usd, 6)},
                           sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class TokenStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else home_dir("approval") / "tokens.db"
        with closing(self._db()) as db, db:
            db.execute("CREATE TABLE IF NOT EXISTS tokens (token TEXT PRIMARY KEY, action TEXT NOT NULL, "
                       "tool TEXT NOT NULL, cost REAL NOT NULL, expires REAL NOT NULL, used REAL)")

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)

    def issue(self, tool: str, arguments: dict, cost_usd: float, now: float | None = None) -> tuple[str, float]:
        token = "tp-approve-" + secrets.token_urlsafe(12)
        expires = (now or time.time()) + TTL_S
        with closing(self._db()) as db:
            db.execute("INSERT INTO tokens VALUES (?, ?, ?, ?, ?, NULL)",
                       (token, action_hash(tool, arguments, cost_usd), tool, cost_usd, expires))
        return token, expires

    def redeem(self, token: str, tool: str, arguments: dict, cost_usd: float, now: float | None = None) -> None:
        """Consume the token for exactly this action, or raise ApprovalError saying why not."""
        now = now or time.time()
        again = "call the tool again without approval_token to get a fresh quote, show it to the human, " \
                "and pass the new token only after they approve."
        with closing(self._db()) as db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT action, expires, used FROM tokens WHERE token = ?", (token,)).fetchone()
            if row is None:
                db.execute("ROLLBACK")
                raise ApprovalError("The approval token is not one this server issued.", again)
            action, expires, used = row
            if used is not None:
                db.execute("ROLLBACK")
                raise ApprovalError("The approval token was already used (tokens are single-use).", again)
            if now > expires:
                db.execute("ROLLBACK")
                raise ApprovalError("The approval token expired (tokens last 10 minutes).", again)
            if action != action_hash(tool, arguments, cost_usd):
                db.execute("ROLLBACK")
                raise ApprovalError("The approval token was issued for different arguments or a different cost.",
                                    again)
            db.execute("UPDATE tokens SET used = ? WHERE token = ?", (now, token))
            db.execute("COMMIT")
