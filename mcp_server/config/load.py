"""Load a YAML config into a TrainConfig, turning every failure into one ConfigError.

Two steps: ``parse_config`` checks keys, types and combinations (no file system access beyond
the YAML itself); ``resolve_config`` makes local paths absolute against the config's folder and
checks that they exist, so a job never starts on a missing dataset or model folder.

Neither step reads a credential file (``guard_paths``), and no error quotes more of a file than a key that
looks like a key and a short, redacted value: a file that is not a config (``/etc/shadow``, a ``.env``) is
answered with "not a YAML mapping" / "not a tunepack config", never with its lines.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from ..errors import ConfigError, DataError, usable_path
from ..guard_paths import Rules, refuse_credential
from ..redact import redact_text
from ..sniff import session_format
from ..walk import walk_files
from .schema import HUB_ID, TrainConfig

DATA_SUFFIXES = (".jsonl", ".json", ".parquet")
# Names people (and agents) often bring from other trainers.
SYNONYMS = {
    "lr": "learning_rate", "epochs": "num_train_epochs", "batch_size": "per_device_train_batch_size",
    "max_seq_length": "max_length", "seq_len": "max_length", "rank": "r", "lora_alpha": "alpha",
    "lora_dropout": "dropout", "lora_r": "r", "grad_accum": "gradient_accumulation_steps",
}
FIX = "edit the keys named above, then re-check with `tunepack validate CONFIG`."
MAX_CONFIG_BYTES = 1 << 20  # a config is a few KB; a bigger file is not one
# An error names a key only when it looks like one: never a line of a file that is not a config.
KEY_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")
MAX_VALUE_SHOWN = 80  # characters of a wrong value an error quotes
HIDDEN = "(a key that is not shown)"


def looks_like_key(part: Any) -> bool:
    """A list index, or a short identifier-like name that is not a secret's shape."""
    if isinstance(part, int):
        return True
    return isinstance(part, str) and KEY_LIKE.fullmatch(part) is not None and redact_text(part, Counter()) == part


def config_key(loc: tuple[Any, ...] | list[Any]) -> str:
    """The dotted key of an error location; a part that does not look like a key is not shown."""
    return ".".join(str(p) if looks_like_key(p) else HIDDEN for p in loc) or "(top level)"


def _value(value: Any) -> str:
    """A wrong value as an error may quote it: a short scalar, else only its type."""
    text = repr(value)
    if isinstance(value, str | int | float | bool) and len(text) <= MAX_VALUE_SHOWN:
        return text
    return f"a {type(value).__name__}"


def _section_model(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = TrainConfig
    for part in loc:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return model
        annotation = model.model_fields[part].annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return model


def _describe(error: ErrorDetails) -> str:
    loc = tuple(error["loc"])
    key = config_key(loc)
    if error["type"] == "extra_forbidden" and not looks_like_key(loc[-1]):
        where = config_key(loc[:-1]) if loc[:-1] else "the top level"
        return f"a key in {where} that does not look like a config key (not shown)"
    if error["type"] == "extra_forbidden":
        parent = _section_model(loc[:-1])
        allowed = sorted(parent.model_fields) if parent else []
        guess = [SYNONYMS[str(loc[-1])]] if SYNONYMS.get(str(loc[-1])) in allowed else []
        guess = guess or difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f" — did you mean '{guess[0]}'?" if guess else ""
        where = config_key(loc[:-1]) if loc[:-1] else "the top level"
        return f"unknown key '{key}'{hint} (allowed in {where}: {', '.join(allowed)})"
    if error["type"] == "missing":
        return f"missing required key '{key}'"
    message = error["msg"].removeprefix("Value error, ")
    if loc and error["type"] != "value_error":
        return f"'{key}' = {_value(error.get('input'))}: {message}"
    return message if (not loc or message.startswith(key)) else f"{key}: {message}"


def _not_a_config(data: Any, source: str) -> ConfigError | None:
    """A file that is not a tunepack config at all: said without quoting any of it."""
    start = "start from examples/demo.yaml and change the values you need."
    sections = ", ".join(TrainConfig.model_fields)
    if data is None:
        return ConfigError(f"{source} is empty: it is not a YAML mapping with sections {sections}.", start)
    if not isinstance(data, dict):
        return ConfigError(f"{source} is not a YAML mapping (it parses as a {type(data).__name__}); a config must "
                           f"be a YAML mapping with sections {sections}.", start)
    if data and not set(map(str, data)) & set(TrainConfig.model_fields):
        named = [f"'{k}'" for k in data if looks_like_key(k)][:5]
        keys = f" (its keys include {', '.join(named)})" if named else ""
        return ConfigError(f"{source} is not a tunepack config: none of its {len(data)} top-level keys is a section "
                           f"({sections}){keys}.", start)
    return None


def parse_config(data: Any, source: str = "config") -> TrainConfig:
    """Validate a mapping (already parsed YAML or tool arguments) into a TrainConfig. Errors quote keys that look
    like keys and short values only (redacted), never a line of a file that is not a config."""
    if (error := _not_a_config(data, source)) is not None:
        raise error
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        problems = list(dict.fromkeys(_describe(e) for e in exc.errors()))
        problem = redact_text(f"{source} is invalid: " + "; ".join(problems) + ".", Counter())
        raise ConfigError(problem, FIX) from None


def _text(path: Path) -> str:
    """The file's text: a credential file refused, a huge or non-UTF-8 file one clean error (none quotes it)."""
    refuse_credential(path, "config")
    if not path.is_file():
        raise ConfigError(f"Config file '{path}' does not exist.", "pass the path of a YAML config, e.g. examples/demo.yaml.")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"Config '{path}' is {size:,} bytes; a config is a few KB of YAML, so this is not one.",
                          "pass the path of a YAML config, e.g. examples/demo.yaml.")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"Config '{path}' is not UTF-8 text (byte {exc.start} is not), so it is not a YAML config.",
                          "pass the path of a YAML config, e.g. examples/demo.yaml.") from None


def read_yaml(path: str | Path) -> Any:
    path = usable_path(path, "config path")
    text = _text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = redact_text(str(getattr(exc, "problem", None) or str(exc).splitlines()[0])[:120], Counter())
        raise ConfigError(
            f"Config '{path}' is not valid YAML{where}: {reason}.",
            "fix the YAML syntax there (indentation with spaces, 'key: value', quotes around values with ':').",
        ) from None
    except RecursionError:
        raise ConfigError(f"Config '{path}' nests its YAML too deeply to be read.",
                          "a config is a few flat sections: start from examples/demo.yaml.") from None


def load_config(path: str | Path) -> TrainConfig:
    """Read, validate and resolve a YAML config file."""
    path = Path(path)
    return resolve_config(parse_config(read_yaml(path), source=f"Config '{path}'"), base_dir=path.parent)


def _data_files(entry: Path) -> list[Path]:
    if entry.is_dir():
        allowed = Rules().allows  # a credential file inside a data folder is not data
        return walk_files(entry, lambda p: p.suffix in DATA_SUFFIXES and allowed(p))
    return [entry]


def _absolute(value: str, base: Path) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else (base / p)


def _checked_data_files(entry: str, p: Path) -> list[Path]:
    """The readable, non-empty dataset files of one existing data.path entry."""
    files = _data_files(p)
    if not files:
        raise DataError(
            f"data.path '{entry}' is a folder with no .jsonl/.json/.parquet files.",
            "put the dataset files there, or point data.path at the files themselves.",
        )
    for f in files:
        if f.suffix not in DATA_SUFFIXES:
            raise DataError(
                f"data.path '{f}' has the suffix '{f.suffix}', which the loader cannot read.",
                "convert it to .jsonl, .json or .parquet.",
            )
        if f.stat().st_size == 0:
            raise DataError(f"data.path '{f}' is empty (0 bytes).", "write rows into it or remove it from data.path.")
    return files


def _resolve_data_paths(cfg: TrainConfig, base: Path) -> list[str]:
    resolved: list[str] = []
    for entry in cfg.data.path:
        p = refuse_credential(_absolute(entry, base), "data.path")
        if not p.exists():
            raise DataError(
                f"data.path '{entry}' does not exist (looked at {p}).",
                "point data.path at a .jsonl/.json/.parquet file or a folder of them; "
                "relative paths are read from the config file's folder.",
            )
        if cfg.data.format == "traces":  # raw sessions: folders stay folders, the converter reads them
            resolved.append(str(p))
            continue
        resolved.extend(str(f) for f in _checked_data_files(entry, p))
    return resolved


def _sessions_as_traces(cfg: TrainConfig, base: Path) -> TrainConfig:
    """Raw agent sessions in data.path are read as sessions: with data.format auto the config becomes a traces
    config (its defaults follow, next-action among them); an explicit row format over sessions is refused."""
    if cfg.data.format == "traces" or not cfg.data.path:
        return cfg
    for entry in cfg.data.path:
        p = _absolute(entry, base)
        kind = session_format(refuse_credential(p, "data.path")) if p.exists() else None
        if kind is None:
            continue
        if cfg.data.format != "auto":
            raise DataError(f"data.path '{entry}' holds raw {kind} agent sessions, but data.format is "
                            f"'{cfg.data.format}', which reads chat rows.",
                            "set data.format: traces (or leave it out: auto reads sessions as traces); tunepack "
                            "converts them at run time, or convert them first with `tunepack traces convert`.")
        raw = cfg.model_dump(exclude_unset=True)
        raw["data"]["format"] = "traces"
        return TrainConfig.model_validate(raw)
    return cfg


def _resolve_model_name(name: str, base: Path) -> str:
    """A local model folder's absolute path; a Hub id (or anything not local) unchanged."""
    p = _absolute(name, base)
    looks_local = name.startswith((".", "/", "~")) or p.exists() or not HUB_ID.match(name)
    if not looks_local:
        return name
    refuse_credential(p, "model.name")
    refuse_credential(p / "config.json", "model.name's config.json")
    if not p.is_dir():
        raise ConfigError(
            f"model.name '{name}' is neither an existing model folder (looked at {p}) "
            "nor a Hub id of the form namespace/name.",
            "give a Hub id such as Qwen/Qwen3-0.6B, the path of a saved model folder, "
            "or tiny:qwen3 for the embedded CPU demo model.",
        )
    if not (p / "config.json").is_file():
        raise ConfigError(
            f"model.name '{p}' is a folder without config.json, so it is not a saved model.",
            "point at the folder written by save_pretrained (it holds config.json and the weights).",
        )
    return str(p)


def _resolve_chat_template(tmpl: str, base: Path) -> str:
    """A template file's absolute path; 'model' and the trl:/tunepack: names unchanged."""
    if tmpl == "model" or tmpl.startswith(("trl:", "tunepack:")):
        return tmpl
    p = refuse_credential(_absolute(tmpl, base), "chat_template")
    if not p.is_file():
        raise ConfigError(
            f"chat_template file '{tmpl}' does not exist (looked at {p}).",
            "give the path of a .jinja file, 'model', a TRL training template such as trl:qwen3, or one of "
            "tunepack's such as tunepack:gemma4_v5.",
        )
    return str(p)


def _resolve_eval(cfg: TrainConfig, base: Path) -> None:
    cfg.eval.tasks = [str(_existing(_absolute(t, base), f"eval.tasks '{t}'")) if t.endswith(".jsonl") else t
                      for t in cfg.eval.tasks]
    if cfg.eval.bfcl_source:
        found = _absolute(cfg.eval.bfcl_source, base)
        cfg.eval.bfcl_source = str(found if found.is_dir() else _existing(found, "eval.bfcl_source"))
    if cfg.eval.mbpp_source != "hub":
        source = cfg.eval.mbpp_source
        cfg.eval.mbpp_source = str(_existing(_absolute(source, base), f"eval.mbpp_source '{source}'"))


def resolve_config(cfg: TrainConfig, base_dir: str | Path = ".") -> TrainConfig:
    """Return a copy whose local paths are absolute and known to exist."""
    base = Path(base_dir).resolve()
    cfg = _sessions_as_traces(cfg, base)
    cfg = cfg.model_copy(deep=True)
    if cfg.data.path:
        cfg.data.path = _resolve_data_paths(cfg, base)
    if not cfg.model.is_tiny:
        cfg.model.name = _resolve_model_name(cfg.model.name, base)
    if cfg.teacher is not None:
        cfg.teacher.name = _resolve_teacher_name(cfg.teacher.name, base)
    env = cfg.environment
    if env is not None and env.name == "openenv" and env.env:
        folder = _absolute(env.env_path or ".", base)
        if not folder.is_dir():
            raise ConfigError(f"environment.env_path is not a folder (looked at {folder}).",
                              "give the folder that holds the environment's module (relative paths are read from the "
                              "config file's folder).")
        env.env_path = str(folder)
    if cfg.grpo.heldout_path:
        cfg.grpo.heldout_path = str(_existing(_absolute(cfg.grpo.heldout_path, base), "grpo.heldout_path"))
    cfg.grpo.reward_files = {name: str(_existing(_absolute(path, base), f"grpo.reward_files {name} '{path}'"))
                             for name, path in cfg.grpo.reward_files.items()}
    cfg.chat_template = _resolve_chat_template(cfg.chat_template, base)
    if cfg.output.adapter_dir:
        cfg.output.adapter_dir = str(_absolute(cfg.output.adapter_dir, base))
    _resolve_eval(cfg, base)
    return cfg


def _resolve_teacher_name(name: str, base: Path) -> str:
    """teacher.name: a Hub id unchanged; a local model folder or PEFT adapter folder, absolute."""
    p = _absolute(name, base)
    if not (name.startswith((".", "/", "~")) or p.exists() or not HUB_ID.match(name)):
        return name
    refuse_credential(p, "teacher.name")
    if not any((p / f).is_file() for f in ("config.json", "adapter_config.json")):
        raise ConfigError(
            f"teacher.name '{name}' is neither a saved model or adapter folder (looked for config.json or "
            f"adapter_config.json in {p}) nor a Hub id of the form namespace/name.",
            "give a Hub id such as Qwen/Qwen3-4B, a folder written by save_pretrained, or the adapter folder of an "
            "SFT run on the larger model (`tunepack registry list` shows their paths).",
        )
    return str(p)


def _existing(path: Path, what: str) -> Path:
    refuse_credential(path, what.split(" ")[0])
    if not path.is_file():
        raise ConfigError(
            f"{what} does not exist (looked at {path}).",
            "give an existing file (relative paths are read from the config file's folder), or use 'hub'/'humaneval'/'mbpp'.",
        )
    return path


def dump_config(cfg: TrainConfig) -> str:
    """The config as YAML, defaults included (what the script and the manifest record)."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
