"""Experiment ledger: what was tried, by whom, with which result, and what must not be tried again.

One SQLite file in the tunepack home (``ledger/ledger.db``) holds every project's experiments.
Planners propose, workers claim (atomically) and record, reviewers re-classify and report; the
plateau rule says when to stop. ``Ledger`` is the Python API the MCP tools, the CLI and sweeps use.
"""

from ..errors import LedgerError
from .model import FINISHED, STATUSES, Experiment, Plateau, config_hash_of, direction_for
from .report import export_tsv, report_markdown
from .store import Ledger

__all__ = ["FINISHED", "STATUSES", "Experiment", "Ledger", "LedgerError", "Plateau", "config_hash_of",
           "direction_for", "export_tsv", "report_markdown"]
