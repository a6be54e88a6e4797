"""Sweeps room: many runs of one base config (grid / random / explicit), a canary first, at most N at
once, early stop of diverging runs, and the pick of the best — locally or on HF Jobs.

``spec`` (the YAML / tool arguments) → ``plan`` (diffs, costs, ledger refusals) → ``run.submit_sweep``
(approval, ledger proposals, the controller job) → ``controller`` (canary gate, concurrency, early stop,
retries, state file) → ``status`` / ``select`` / ``report``. The CLI is ``tunepack sweep``; the MCP tools
are ``sweep_plan``, ``sweep_submit``, ``sweep_status``, ``sweep_select``, ``sweep_report``, ``sweep_cancel``.
"""

from .plan import PlannedRun, SweepPlan, build_plan, plan_sweep
from .run import SubmitResult, cancel_sweep, resume_sweep, submit_sweep
from .select import Selection, select_sweep
from .spec import SweepError, SweepSpec, load_spec
from .state import SweepState, list_sweeps, read_state, sweep_dir
from .status import SweepStatusView, sweep_status

__all__ = ["PlannedRun", "Selection", "SubmitResult", "SweepError", "SweepPlan", "SweepSpec", "SweepState",
           "SweepStatusView", "build_plan", "cancel_sweep", "list_sweeps", "load_spec", "plan_sweep", "read_state",
           "resume_sweep", "select_sweep", "submit_sweep", "sweep_dir", "sweep_status"]
