"""Approval room: what needs a human yes (spending, publishing), two-step tokens, the daily budget, and
``spend`` — the one gate every paid job goes through, whichever face started it."""

from .budget import Budget, BudgetStatus
from .gate import Asked, Decision, decide
from .spend import Consent, Spend, approve, reconcile, spend
from .tokens import ApprovalError, Quote, TokenStore, action_hash

__all__ = ["ApprovalError", "Asked", "Budget", "BudgetStatus", "Consent", "Decision", "Quote", "Spend", "TokenStore",
           "action_hash", "approve", "decide", "reconcile", "spend"]
