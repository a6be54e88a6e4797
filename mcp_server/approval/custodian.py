"""Custodian mode: ``tunepack serve --http --custodian`` run by the person under an OS account of its own (or a
container) that alone holds the HF token, the budget and the quotes. The agent, under its own account, reaches
paid actions only through that server, and a quote approves nothing until the custodian account's person runs
``tunepack approve TOKEN``. What this module can do is make the custodian's own files private to its account;
that the agent's account has no token and no way into this one is the person's setup (README, Security).

Nothing the agent can influence runs as the custodian: a script the agent names, and a config whose run would
execute the agent's code outside the sandbox (``config.agent_code.agent_code_paths``: custom model code, an
``unsafe-host`` sandbox) are refused on this machine (``refuse_agent_code``); they can run on HF Jobs (its own
machine, with the custodian's approval) or under the agent's own account. Generated code, rows' tests and reward
files run in the kit's sandbox (another uid or namespaces, no token, no home), which stays allowed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .. import settings
from ..errors import ApprovalError
from ..home import tunepack_home


def _private(path: Path, mode: int) -> str | None:
    """Make ``path`` readable by its owner only; a note when it was not."""
    current = stat.S_IMODE(path.stat().st_mode)
    if not current & 0o077:
        return None
    if path.stat().st_uid != os.geteuid():
        raise ApprovalError(f"{path} is readable by other accounts and belongs to another one.",
                            f"run the custodian server under the account that owns it, or `chmod {mode:o} {path}` "
                            "as its owner.")
    os.chmod(path, mode)
    return f"{path}: mode {current:o} → {mode:o} (other accounts could read it)"


def prepare_custodian(token_path: str | Path | None = None) -> list[str]:
    """The tunepack home (budget, quotes, jobs) and the saved HF token made private to this account; notes of
    what changed."""
    from huggingface_hub import constants

    home = tunepack_home()
    home.mkdir(parents=True, exist_ok=True)
    notes = [_private(home, 0o700)]
    token = Path(token_path or constants.HF_TOKEN_PATH)
    if token.exists():
        notes.append(_private(token, 0o600))
        notes.append(_private(token.parent, 0o700))
    return [n for n in notes if n]


def activate() -> None:
    """This process is the custodian server; its local jobs inherit the mode (settings.TUNEPACK_CUSTODIAN)."""
    settings.set_custodian_mode()


def active() -> bool:
    """Is this process the custodian server (or a job it started)?"""
    return settings.custodian_mode()


def refuse_agent_code(what: str, paths: list[str], fix: str) -> None:
    """In custodian mode, refuse ``what`` when it would run code the agent can influence (``paths`` say where) on
    this machine, under the account that holds the token, the budget and the quotes. Nothing otherwise."""
    if active() and paths:
        raise ApprovalError(
            f"Custodian mode runs no code an agent can influence under the custodian's account, and {what} would: "
            + "; ".join(paths) + ".", fix)
