"""A continual-learning loop's spec (``loop.yaml``): where new sessions come from, what trains on them, what it is
judged on and when a new adapter replaces the one in use.

    name: my-agent
    config: train.yaml              # the training config: model, method, training settings (data.path is the loop's)
    sources: [~/.pi/agent/sessions] # harness session folders or files, converted and redacted on the way in
    frozen_sessions: 2              # held out at the first cycle, never trained on in any cycle
    recent_fraction: 0.25           # of each cycle's new sessions, held out as the recent slice (trained next cycle)
    min_new_sessions: 4             # fewer new sessions: the cycle is refused (not worth a run)
    retention: {path: general.jsonl, margin: 0.05}   # held-out loss on a fixed general set may rise this much
    promote: {z: 1.96}              # the paired gain must exceed z standard errors of the paired difference
    from_base_every: 0              # train from the base model every K cycles (0: always from the current adapter)
    max_cycles: 10                  # a schedule stops after this many cycles
    state_repo: alice/my-agent-loop # on HF Jobs (`tunepack loop schedule`): the Hub repo of the loop's state
                                    # (default NAMESPACE/NAME-loop); its sources must then be hf://datasets/… repos
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import Field, ValidationError, field_validator

from ..config import TrainConfig
from ..config.section import Section
from ..errors import ConfigError


class Retention(Section):
    """What must not get worse: the mean loss of the model's turns on a fixed general set (chat rows, e.g. coding
    questions with answers), scored for the current adapter and the candidate alike."""

    path: str = Field(description="A .jsonl of chat rows ('messages') that no cycle trains on.")
    margin: float = Field(0.05, ge=0, description="How much the candidate's mean loss (nats per token) there may "
                                                  "exceed the current adapter's before the candidate is kept out.")


class Promote(Section):
    """The promotion rule, on paired scores: each held-out row scored by the current adapter and the candidate."""

    z: float = Field(1.96, gt=0, description="The mean paired gain (current loss minus candidate loss) must exceed "
                                             "z times its standard error (1.96: about 95 % one-sided 97.5 %).")


class LoopSpec(Section):
    name: str = Field(description="The loop's name: its state folder, the registry name of its adapters "
                                  "(NAME@vN) and its Trackio groups.")
    config: str = Field(description="The training config (model, method, LoRA and training settings); its "
                                    "data.path is replaced by each cycle's rows, its output.name by the loop's name.")
    sources: list[str] = Field(min_length=1, description="Harness session folders or files (Pi, Claude Code, Codex, "
                                                         "OpenCode, …), converted and redacted each cycle.")
    frozen_sessions: int = Field(2, ge=1, description="Sessions held out at the first cycle and never trained on: "
                                                      "the frozen evaluation set.")
    recent_fraction: float = Field(0.25, gt=0, lt=1, description="The share of each cycle's new sessions held out as "
                                                                 "the recent slice (at least one); they train in the "
                                                                 "next cycle.")
    min_new_sessions: int = Field(4, ge=2, description="Refuse a cycle with fewer new sessions than this.")
    retention: Retention
    promote: Promote = Field(default_factory=Promote)
    from_base_every: int = Field(0, ge=0, description="Train from the base model every K cycles (0: always from "
                                                      "the current adapter).")
    max_cycles: int = Field(10, ge=1, description="At most this many cycles are run (a schedule stops there).")
    seed: int = Field(7, description="Seed of the frozen draw and the recent slices.")
    state_repo: str | None = Field(None, description="A loop scheduled on HF Jobs: the private Hub dataset repo "
                                                     "that holds its state (default NAMESPACE/NAME-loop).")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", value):
            raise ValueError("use lowercase letters, digits and '-' (it names a folder and a registry entry)")
        return value

    def resolved(self, base: Path) -> LoopSpec:
        """Paths relative to the spec's folder made absolute."""
        def at(p: str) -> str:
            if p.startswith("hf://"):  # a Hub dataset repo of sessions (traces/hub.py): not a path
                return p
            path = Path(p).expanduser()
            return str(path if path.is_absolute() else (base / path).resolve())

        return self.model_copy(update={"config": at(self.config), "sources": [at(s) for s in self.sources],
                                       "retention": self.retention.model_copy(update={"path": at(self.retention.path)})})


def load_spec(path: str | Path) -> LoopSpec:
    source = Path(path).expanduser()
    if not source.is_file():
        raise ConfigError(f"The loop spec {path} does not exist.", "write one (see `tunepack loop --help` and "
                          "docs/loop.md), then pass its path.")
    try:
        raw = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
        spec = LoopSpec.model_validate(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"The loop spec {path} is not valid YAML: {str(exc)[:200]}",
                          "fix the YAML syntax and run again.") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'spec'}: {e['msg']}" for e in exc.errors()[:5])
        raise ConfigError(f"The loop spec {path} is invalid: {problems}.", "edit the keys named above.") from None
    return spec.resolved(source.resolve().parent)


def load_loop_config(spec: LoopSpec) -> TrainConfig:
    """The loop's training config. Its data.path is the loop's (each cycle puts its own rows there), so a path
    that does not exist here (a loop whose sessions are on the Hub) is not an error: the config then loads with
    the retention set in its place, read as converted sessions (data.format traces, unless the config names one)."""
    from ..config.load import load_config, parse_config, read_yaml, resolve_config
    from ..errors import DataError

    try:
        return load_config(spec.config)
    except DataError:  # its data.path is missing or empty here: the loop fills it
        pass
    raw = read_yaml(spec.config)
    data = raw.get("data") if isinstance(raw, dict) else None
    base = Path(spec.config).parent
    kept = {k: v for k, v in (data or {}).items() if k not in ("path", "hub_id", "revision", "split")}
    fmt = kept.get("format") if kept.get("format") not in (None, "auto") else "traces"
    raw = {**raw, "data": {**kept, "format": fmt, "path": [spec.retention.path]}}
    return resolve_config(parse_config(raw, source=f"Config '{spec.config}'"), base_dir=base)
