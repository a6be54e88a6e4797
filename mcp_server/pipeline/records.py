"""What the pipeline hands from the process that starts a job to the job body: ``run.json`` (a training
run) and ``preflight.json`` (a preflight), typed once and shared by the writer and the reader."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import ClassVar, Self

from pydantic import BaseModel

from ..config import TrainConfig
from ..methods.base import Check as Check  # one line of a preflight report (the methods add theirs)


class _Record(BaseModel):
    FILE: ClassVar[str]

    def write(self, run_dir: str | Path) -> Path:
        """Atomically: a job never reads half a record."""
        path = Path(run_dir) / self.FILE
        fd, tmp = tempfile.mkstemp(prefix=f".{self.FILE}-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(self.model_dump_json(indent=2))
        os.replace(tmp, path)
        return path

    @classmethod
    def read(cls, run_dir: str | Path) -> Self:
        return cls.model_validate_json((Path(run_dir) / cls.FILE).read_text(encoding="utf-8"))


class RunRecord(_Record):
    """A local training run: what the pipeline job trains, where the adapter goes, what it registers."""

    FILE: ClassVar[str] = "run.json"
    config: TrainConfig
    run_name: str
    script: str
    output_dir: str
    default_output: bool  # the adapter folder is the run's own (removed once the registry holds the copy)
    registry_name: str
    trackio_dir: str
    tiny_model: str | None = None  # a tiny replica to build first (tiny:<family> models)


class SmokePlan(BaseModel):
    script: str
    config: TrainConfig
    output_dir: str


class PreflightPlan(_Record):
    """A preflight job: the real config's mask check, then (local data) a few smoke steps on the tiny replica."""

    FILE: ClassVar[str] = "preflight.json"
    check_script: str
    check_args: list[str] = ["--check-only"]  # GRPO: --rl-check (the ceiling and the starting model's groups too)
    config: TrainConfig
    smoke: SmokePlan | None = None
