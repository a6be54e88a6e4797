"""A sweep spec: a base config plus a search over its fields (dotted paths), and how to run and judge it.

```yaml
name: lr-rank                       # letters, digits, '-', '_'
base: demo.yaml                     # the base config, relative to this file
set: {training.max_steps: 12}       # applied to every run
grid:                               # every combination ...
  training.learning_rate: [0.001, 0.003]
  lora.r: [4, 8]
random: {samples: 4, seed: 0, params: {training.learning_rate: {low: 1e-4, high: 1e-2, log: true}}}
runs: [{training.learning_rate: 0.01}]   # ... plus explicit runs
max_concurrent: 5
metric: {name: eval_loss, direction: min, reduce: last}   # or eval/humaneval/pass@1, or any logged metric
budget_usd: 20                      # worst-case cap for the whole sweep (paid flavors)
backend: hf                         # default: the base config's job section
flavor: a10g-small
timeout_s: 3600                     # per run; default: the estimate plus 30 %
canary: {steps: 2}                  # one run first; the rest start once it logged 2 steps cleanly
early_stop: {patience: 3}           # NaN, or loss above its start for 3 consecutive logs: stop the run
retries: 1                          # resubmissions after an infrastructure failure (never a script crash)
```
"""

from __future__ import annotations

import copy
import difflib
import itertools
import json
import math
import random as _random
import re
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..config import TrainConfig
from ..config.load import SYNONYMS, config_key, read_yaml
from ..errors import SweepError

MAX_RUNS = 64
FIX = "edit the sweep spec (see examples/sweep.yaml), then check it with `tunepack sweep plan SPEC`."


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Range(_Strict):
    low: float = Field(description="Smallest value.")
    high: float = Field(description="Largest value.")
    log: bool = Field(False, description="Sample uniformly in log space (learning rates).")
    integer: bool = Field(False, description="Round to an integer (ranks, lengths).")

    @model_validator(mode="after")
    def _order(self) -> "Range":
        if not self.low < self.high:
            raise ValueError(f"a range needs low < high (got low={self.low}, high={self.high})")
        if self.log and self.low <= 0:
            raise ValueError("a log range needs low > 0")
        return self


class RandomSearch(_Strict):
    samples: int = Field(ge=1, le=MAX_RUNS, description="How many runs to draw.")
    seed: int = Field(0, description="Seed of the draw (the same seed draws the same runs).")
    params: dict[str, list[Any] | Range] = Field(description="Dotted config key -> a list of values or a range.")


class MetricSpec(_Strict):
    name: str | None = Field(None, description="eval/<task>/pass@1 (from eval.tasks), eval_loss, loss, or any "
                             "metric the runs log (e.g. mean_token_accuracy). Default: eval_loss when the base "
                             "has eval data, else loss.")
    direction: Literal["min", "max"] | None = Field(None, description="Better is lower (min) or higher (max); "
                                                    "default: min for losses, else max.")
    reduce: Literal["last", "best"] = Field("last", description="A logged metric's last value, or its best.")


class CanarySpec(_Strict):
    enabled: bool = Field(True, description="Run one canary before the others.")
    steps: int = Field(2, ge=1, description="The others start once the canary logged this many steps cleanly.")
    run: str | None = Field(None, description="The canary's run id (r01 …); default: the heaviest run "
                            "(longest max_length × batch × processes, then highest rank).")


class EarlyStopSpec(_Strict):
    enabled: bool = Field(True, description="Stop diverging runs.")
    patience: int = Field(3, ge=1, description="Stop when the loss stays above its first value this many "
                          "consecutive logs (NaN stops at once).")


class SweepSpec(_Strict):
    name: str = Field(description="Sweep name: letters, digits, '-' and '_'.", min_length=1, max_length=48)
    base: str | dict = Field(description="The base config: a path (relative to the spec file) or a mapping.")
    set: dict[str, Any] = Field(default_factory=dict, description="Dotted key -> value applied to every run.")
    grid: dict[str, list[Any]] = Field(default_factory=dict, description="Dotted key -> values: every combination.")
    random: RandomSearch | None = Field(None, description="Random search (added after the grid).")
    runs: list[dict[str, Any]] = Field(default_factory=list, description="Explicit runs: dotted key -> value each.")
    max_concurrent: int = Field(5, ge=1, le=32, description="Most runs at once.")
    metric: MetricSpec = Field(default_factory=MetricSpec)
    budget_usd: float | None = Field(None, ge=0, description="Worst-case cost cap of the whole sweep (USD); 0 = "
                                     "free runs only (local); omit for no cap beyond the daily budget.")
    backend: Literal["local", "hf"] | None = Field(None, description="Default: the base config's job.backend.")
    flavor: str | None = Field(None, description="Hardware flavor (hf); default: the base config's job.flavor.")
    timeout_s: int | None = Field(None, ge=60, description="Per run; default: the base config's job.timeout_s, "
                                  "else the estimate plus 30 % (hf).")
    force: bool = Field(False, description="Allow remote timeouts under 30 minutes (smoke sweeps).")
    canary: CanarySpec = Field(default_factory=CanarySpec)
    early_stop: EarlyStopSpec = Field(default_factory=EarlyStopSpec)
    retries: int = Field(1, ge=0, le=5, description="Resubmissions of a run after an infrastructure failure.")
    ledger: str | None = Field(None, description="Ledger project; default: the base config's tracking.project.")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", value):
            raise ValueError(f"'{value}' may only hold letters, digits, '-' and '_'")
        return value

    @field_validator("grid")
    @classmethod
    def _grid(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in value.items():
            if not values:
                raise ValueError(f"grid.{key} has no values")
        return value

    @model_validator(mode="after")
    def _something(self) -> "SweepSpec":
        if not (self.grid or self.random or self.runs):
            raise ValueError("the spec searches nothing: give grid, random or runs")
        return self


# --- dotted paths ---------------------------------------------------------------------------------

def _field_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The section a field holds, also when it is optional (teacher: TeacherSection | None)."""
    annotation = model.model_fields[name].annotation
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def check_key(key: str) -> str:
    """A dotted key that names a config field (training.learning_rate), or a SweepError saying which."""
    model: type[BaseModel] | None = TrainConfig
    parts = key.split(".")
    for i, part in enumerate(parts):
        if model is None:
            raise SweepError(f"Sweep key '{key}': '{'.'.join(parts[:i])}' is a value, not a section.", FIX)
        if part not in model.model_fields:
            allowed = sorted(model.model_fields)
            guess = [SYNONYMS[part]] if SYNONYMS.get(part) in allowed else difflib.get_close_matches(part, allowed, n=1)
            hint = f" — did you mean '{'.'.join(parts[:i] + [guess[0]])}'?" if guess else ""
            raise SweepError(f"Sweep key '{key}' is not a config field{hint} (allowed after "
                             f"'{'.'.join(parts[:i]) or 'the top level'}': {', '.join(allowed)}).", FIX)
        model = _field_model(model, part)
    if model is not None:
        raise SweepError(f"Sweep key '{key}' names a whole section.", "name one field in it, e.g. "
                         f"'{key}.{sorted(model.model_fields)[0]}'.")
    return key


def set_dotted(data: dict, key: str, value: Any) -> None:
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


# --- loading and expanding -----------------------------------------------------------------------

def load_spec(source: str | Path | dict, base_dir: str | Path | None = None) -> tuple[SweepSpec, Path]:
    """A spec from a YAML file or a mapping (tool arguments); returns it with the folder its paths are
    relative to."""
    if isinstance(source, dict):
        data, folder = source, Path(base_dir or ".")
    else:
        path = Path(source)
        data, folder = read_yaml(path), path.parent
    if not isinstance(data, dict):
        raise SweepError("A sweep spec must be a YAML mapping (name, base, grid/random/runs, …).", FIX)
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            where = config_key(e["loc"])  # a part that does not look like a key (a file's line) is not shown
            msg = e["msg"].removeprefix("Value error, ")
            problems.append(f"unknown key '{where}'" if e["type"] == "extra_forbidden" else f"{where}: {msg}")
        raise SweepError("The sweep spec is invalid: " + "; ".join(dict.fromkeys(problems)) + ".", FIX) from None
    for key in [*spec.set, *spec.grid, *(spec.random.params if spec.random else {}),
                *(k for run in spec.runs for k in run)]:
        check_key(key)
    return spec, folder.resolve()


def base_data(spec: SweepSpec, folder: Path) -> tuple[dict, Path]:
    """The base config as a mapping, and the folder its relative paths are read from."""
    if isinstance(spec.base, dict):
        return copy.deepcopy(spec.base), folder
    path = Path(spec.base).expanduser()
    path = path if path.is_absolute() else folder / path
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise SweepError(f"The base config '{path}' is not a YAML mapping.", "point base at a tunepack config.")
    return data, path.parent


def _draw(rng: _random.Random, choice: list[Any] | Range) -> Any:
    if isinstance(choice, list):
        return rng.choice(choice)
    if choice.log:
        value = math.exp(rng.uniform(math.log(choice.low), math.log(choice.high)))
    else:
        value = rng.uniform(choice.low, choice.high)
    return int(round(value)) if choice.integer else float(f"{value:.4g}")


def expand(spec: SweepSpec) -> list[dict[str, Any]]:
    """Each run's changes (dotted key -> value, without ``set``), grid first, then random, then explicit;
    duplicates dropped."""
    out: list[dict[str, Any]] = []
    if spec.grid:
        keys = list(spec.grid)
        out += [dict(zip(keys, combo, strict=False)) for combo in itertools.product(*(spec.grid[k] for k in keys))]
    if spec.random:
        rng = _random.Random(spec.random.seed)
        out += [{k: _draw(rng, v) for k, v in spec.random.params.items()} for _ in range(spec.random.samples)]
    out += [dict(run) for run in spec.runs]
    unique, seen = [], set()
    for changes in out:
        key = json.dumps(changes, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            unique.append(changes)
    if len(unique) > MAX_RUNS:
        raise SweepError(f"The sweep expands to {len(unique)} runs; at most {MAX_RUNS} fit one sweep.",
                         "narrow the grid, or split the search into a coarse sweep and a finer second one.")
    return unique


def run_config(base: dict, spec: SweepSpec, changes: dict[str, Any]) -> dict:
    data = copy.deepcopy(base)
    for key, value in {**spec.set, **changes}.items():
        set_dotted(data, key, value)
    return data


def describe(changes: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in changes.items()) or "(base)"


def dump_spec(spec: SweepSpec) -> str:
    return yaml.safe_dump(spec.model_dump(mode="json", exclude_none=True), sort_keys=False)
