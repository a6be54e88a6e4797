"""Config room: the typed training config, loaded from YAML or tool arguments."""

from .load import dump_config, load_config, parse_config, read_yaml, resolve_config
from .schema import TrainConfig

__all__ = ["TrainConfig", "dump_config", "load_config", "parse_config", "read_yaml", "resolve_config"]
