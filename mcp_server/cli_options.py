"""Command-line flags made from a pydantic model, so a CLI command and the MCP tool that takes the same model
(trace conversion options, the eval section) cannot drift apart: every field is a flag, with the field's
description as its help, its literal values as choices, and booleans as ``--x / --no-x``.

    add_model_options(parser, ConvertOptions, rename={"format": "source-format"})
    opts = model_from_args(ConvertOptions, args)          # only the flags given, over the model's defaults
"""

from __future__ import annotations

import argparse
import types
import typing
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

_Model = TypeVar("_Model", bound=BaseModel)

PREFIX = "opt_"  # argparse destinations of model fields, apart from the command's own arguments
YES_HELP = ("you approve what this command spends or publishes; needed when it runs without a terminal "
            "(a paid or publishing command from a pipe or an agent's shell is refused otherwise)")


def _base(annotation: Any) -> Any:
    """The annotation without ``None`` (``int | None`` → ``int``)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return annotation


def _flag_kwargs(annotation: Any) -> dict:
    base = _base(annotation)
    if base is bool:
        return {"action": argparse.BooleanOptionalAction}
    if typing.get_origin(base) is Literal:
        return {"choices": list(typing.get_args(base))}
    if typing.get_origin(base) is list:
        return {"nargs": "+"}
    return {"type": base if base in (int, float, str) else str}


def add_model_options(parser: argparse.ArgumentParser, model: type[BaseModel], *, rename: dict[str, str] | None = None,
                      skip: tuple[str, ...] = ()) -> None:
    """One flag per field of ``model`` (``--max-length`` for ``max_length``; ``rename`` maps a field to another
    flag name where the command already uses that one)."""
    rename = rename or {}
    group = parser.add_argument_group(f"{model.__name__} (the same fields as the MCP tool's argument)")
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        flag = "--" + rename.get(name, name.replace("_", "-"))
        default = info.get_default(call_default_factory=True)
        shown = f" (default: {default})" if default not in (None, [], "") else ""
        group.add_argument(flag, dest=PREFIX + name, default=argparse.SUPPRESS,
                           help=(info.description or "") + shown, **_flag_kwargs(info.annotation))


def model_from_args(model: type[_Model], args: argparse.Namespace, **defaults: Any) -> _Model:
    """The model from the flags given on the command line, over ``defaults``, over the model's own defaults."""
    given = {k[len(PREFIX):]: v for k, v in vars(args).items() if k.startswith(PREFIX)}
    return model(**{**defaults, **given})
