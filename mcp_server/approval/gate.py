"""The approval gate for actions that spend money or publish.

One decision function for every such action. What counts as a human's yes depends on where the call came from:
- the keyboard: a person typed the CLI command in a terminal (or added ``--yes``); without a terminal and
  without ``--yes`` (an agent's plain shell call) a paid command is refused. A pseudo-terminal the agent makes
  itself passes this rule: only the custodian mode holds against that;
- MCP elicitation, when the client supports it: the server asks the human in the client's UI, and only their
  answer approves (approval tokens are refused); a "no" ends that quote;
- a two-step token, when the client cannot elicit (OpenCode): the first call returns the quote and a token bound
  to that MCP session, the human agrees in chat, the second call passes the token back;
- custodian mode: a token approves only after the custodian account's person ran ``tunepack approve TOKEN``.
Against an agent with a shell in the same OS account all of this is a seatbelt, not a wall (README, Security).
Actions that cost nothing, or only CPU time, pass without asking.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .tokens import ApprovalError, TokenStore


class Decision(BaseModel):
    status: Literal["approved", "not_needed", "approval_required"]
    via: Literal["keyboard", "elicitation", "token", "custodian", "sweep", "none"] = "none"
    approval_token: str | None = Field(None, description="pass this back as approval_token once the human agrees")
    expires_at: float | None = None
    message: str = ""


class Asked(BaseModel):
    """Where an MCP call came from, for the gate: can its client elicit, which session, custodian mode?"""

    can_elicit: bool = False
    session: str = ""
    custodian: bool = False


NO_TERMINAL = ("a person: run the command in a terminal, or add --yes to say you approve it; an agent: ask the "
               "human to run it themselves, or use the MCP tool, which asks them.")


def decide(tool: str, arguments: dict, *, cost_usd: float, needs_approval: bool, summary: str,
           elicited: bool | None, approval_token: str | None, tokens: TokenStore | None = None,
           at_keyboard: bool = False, part_of: str | None = None, no_terminal: bool = False,
           asked: Asked | None = None) -> Decision:
    """``elicited`` is True/False when the human answered an elicitation, None when none was asked;
    ``at_keyboard``: a person typed the command in a terminal (the CLI), which is their approval; ``no_terminal``:
    a CLI command without a terminal or --yes; ``part_of``: the sweep whose approval covers this job."""
    if not needs_approval:
        return Decision(status="not_needed")
    if at_keyboard:
        return Decision(status="approved", via="keyboard", message=f"approved at the keyboard: {summary}")
    if no_terminal:
        raise ApprovalError(f"No terminal: {summary} needs a person's yes, and a command run without a terminal "
                            "(an agent's shell, a pipe) is not one.", NO_TERMINAL)
    if part_of:
        return Decision(status="approved", via="sweep", message=f"approved with sweep {part_of}: {summary}")
    asked = asked or Asked()
    tokens = tokens or TokenStore()
    if elicited is False:
        tokens.void(tool, arguments, cost_usd, "the human declined it")
        raise ApprovalError(f"The human declined: {summary}.",
                            "do not retry the same action; ask the human what to change (flavor, timeout, scope).")
    if elicited is True and not asked.custodian:
        return Decision(status="approved", via="elicitation")
    if asked.can_elicit and elicited is None and not asked.custodian:
        raise ApprovalError(f"Not approved: {summary}. This client can ask the human (elicitation), so only their "
                            "answer to that question approves; approval tokens are not accepted here.",
                            "call the tool again without approval_token: the server will ask the human.")
    if approval_token:
        tokens.redeem(approval_token, tool, arguments, cost_usd, session=asked.session, custodian=asked.custodian)
        return Decision(status="approved", via="custodian" if asked.custodian else "token")
    return _quote(tool, arguments, cost_usd, summary, tokens, asked)


def _quote(tool: str, arguments: dict, cost_usd: float, summary: str, tokens: TokenStore, asked: Asked) -> Decision:
    token, expires = tokens.issue(tool, arguments, cost_usd, session=asked.session, summary=summary)
    if asked.custodian:
        how = (f"Ask the human to approve it under the custodian account: `tunepack approve {token}` (the quote "
               f"shows there); then call {tool} again with exactly the same arguments plus "
               f"approval_token='{token}' (single use, valid 10 minutes).")
    else:
        how = (f"Show this to the human; if they approve, call {tool} again in this same session with exactly the "
               f"same arguments plus approval_token='{token}' (single use, valid 10 minutes).")
    return Decision(status="approval_required", via="custodian" if asked.custodian else "token",
                    approval_token=token, expires_at=expires, message=f"Needs human approval: {summary}. {how}")
