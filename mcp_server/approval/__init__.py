"""Approval room: what needs a human yes (spending, publishing), two-step tokens, and the budget."""

from .budget import Budget, BudgetStatus
from .gate import Decision, decide
from .tokens import ApprovalError, TokenStore, action_hash

__all__ = ["ApprovalError", "Budget", "BudgetStatus", "Decision", "TokenStore", "action_hash", "decide"]
