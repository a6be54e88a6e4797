"""Continual learning: new sessions in, a better adapter out only when it is better.

A loop (``loop.yaml``, spec.py) converts the sessions its sources hold, keeps a frozen evaluation set fixed at the
first cycle, and each cycle trains on the sessions new since the last one (cycle.py), scores the adapter in use
and the candidate on the same held-out rows (score.py) and promotes the candidate only on a significant paired
gain with retention kept (decide.py). The state (state.py) makes a cycle resumable and never twice.

    tunepack loop cycle loop.yaml        # run (or resume) the next cycle
    tunepack loop status NAME            # cycles, decisions, the adapter in use
    tunepack loop cron loop.yaml         # the crontab line that runs a cycle on a schedule
    tunepack loop schedule loop.yaml --backend hf --flavor F --timeout S   # each cycle a scheduled HF job
    tunepack loop sync NAME              # the adapter the HF loop promoted, into the local registry

On HF Jobs (schedule.py, remote.py, remote_job.py) the loop's state lives in a Hub repo, the job refuses to train past the
approved cycles or spend and suspends its schedule, and promotions carry the adapter repo's tag ``current``.
"""

from .cycle import run_cycle, status
from .spec import LoopSpec, load_spec
from .state import LoopState, read_state

__all__ = ["LoopSpec", "LoopState", "load_spec", "read_state", "run_cycle", "status"]
