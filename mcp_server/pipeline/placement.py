"""Where a run's job goes: the caller's values first, else the config's ``job`` section, else a local job.

    backend, flavor, timeout_s = placement(cfg, backend=None, flavor=None, timeout_s=None)

`tunepack run`, `tunepack preflight`, pipeline_run and pipeline_preflight all resolve it here, so the config's
`job: {backend: hf, flavor: a10g-small, timeout_s: 7200}` starts, quotes and checks the same job whichever face
is used. A flavor is the config's only where the backend is the config's too (a local run named on the command
line does not inherit a GPU flavor).
"""

from __future__ import annotations

from typing import NamedTuple

from ..config import TrainConfig


class Placement(NamedTuple):
    backend: str
    flavor: str | None
    timeout_s: int | None


def placement(cfg: TrainConfig | None, backend: str | None = None, flavor: str | None = None,
              timeout_s: int | None = None) -> Placement:
    job = cfg.job if cfg is not None else None
    if job is None:
        return Placement(backend or "local", flavor, timeout_s)
    name = backend or job.backend
    return Placement(name, flavor or (job.flavor if name == job.backend else None), timeout_s or job.timeout_s)
