"""The approval gate for actions that spend money or publish.

One decision function for every such action. Approval comes from one of three places:
- the keyboard: a person typed the CLI command themselves;
- MCP elicitation, when the client supports it (the server asks the human in the client's UI);
- a two-step token, when it does not (OpenCode): the first call returns the quote and a token,
  the human agrees in chat, the second call passes the token back.
Actions that cost nothing, or only CPU time, pass without asking.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .tokens import ApprovalError, TokenStore


class Decision(BaseModel):
    status: Literal["approved", "not_needed", "approval_required"]
    via: Literal["keyboard", "elicitation", "token", "sweep", "none"] = "none"
    approval_token: str | None = Field(None, description="pass this back as approval_token once the human agrees")
    expires_at: float | None = None
    message: str = ""


def decide(tool: str, arguments: dict, *, cost_usd: float, needs_approval: bool, summary: str,
           elicited: bool | None, approval_token: str | None, tokens: TokenStore | None = None,
           at_keyboard: bool = False, part_of: str | None = None) -> Decision:
    """``elicited`` is True/False when the human answered an elicitation, None when none was asked;
    ``at_keyboard``: a person typed the command (the CLI), which is their approval; ``part_of``: the sweep
    whose approval covers this job."""
    if not needs_approval:
        return Decision(status="not_needed")
    if at_keyboard:
        return Decision(status="approved", via="keyboard", message=f"approved at the keyboard: {summary}")
    if part_of:
        return Decision(status="approved", via="sweep", message=f"approved with sweep {part_of}: {summary}")
    if elicited is True:
        return Decision(status="approved", via="elicitation")
    if elicited is False:
        raise ApprovalError(f"The human declined: {summary}.",
                            "do not retry the same action; ask the human what to change (flavor, timeout, scope).")
    tokens = tokens or TokenStore()
    if approval_token:
        tokens.redeem(approval_token, tool, arguments, cost_usd)
        return Decision(status="approved", via="token")
    token, expires = tokens.issue(tool, arguments, cost_usd)
    return Decision(
        status="approval_required", via="token", approval_token=token, expires_at=expires,
        message=(f"Needs human approval: {summary}. Show this to the human; if they approve, call {tool} again "
                 f"with exactly the same arguments plus approval_token='{token}' (single use, valid 10 minutes)."),
    )
