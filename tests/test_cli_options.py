"""Flags made from a pydantic model: the CLI twin of a tool that takes a config section cannot drift from it."""

from __future__ import annotations

import argparse

import pytest

from mcp_server.cli import build_parser
from mcp_server.cli_options import add_model_options, model_from_args
from mcp_server.config.schema import EvalSection
from mcp_server.traces.model import ConvertOptions


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def test_every_field_of_the_model_is_a_flag():
    parser = argparse.ArgumentParser()
    add_model_options(parser, ConvertOptions)
    expected = {"--" + name.replace("_", "-") for name in ConvertOptions.model_fields}
    assert expected <= _flags(parser)
    assert {"--no-drop-failed-turns", "--no-redact"} <= _flags(parser)  # booleans both ways


def test_only_the_flags_given_override_the_defaults():
    parser = argparse.ArgumentParser()
    add_model_options(parser, ConvertOptions)
    opts = model_from_args(ConvertOptions, parser.parse_args(["--rows", "window", "--max-length", "512",
                                                              "--no-drop-failed-turns"]))
    assert (opts.rows, opts.max_length, opts.drop_failed_turns) == ("window", 512, False)
    assert opts.thinking == ConvertOptions().thinking and opts.redact is True
    with pytest.raises(SystemExit):  # a literal's choices come from the model
        parser.parse_args(["--rows", "sentences"])


def test_traces_convert_keeps_its_historical_flag():
    args = build_parser().parse_args(["traces", "convert", "a", "-o", "b.jsonl", "--keep-failed-turns"])
    assert model_from_args(ConvertOptions, args).drop_failed_turns is False
    args = build_parser().parse_args(["traces", "convert", "a", "-o", "b.jsonl"])
    assert model_from_args(ConvertOptions, args).drop_failed_turns is True


def test_eval_run_flags_are_the_eval_section():
    args = build_parser().parse_args(["eval", "run", "my-adapter", "--tasks", "humaneval", "mbpp", "--limit", "3",
                                      "--program-timeout", "4", "--inference", "hf", "--backend", "hf",
                                      "--timeout", "900", "--allow-contaminated", "--ngram", "8"])
    ev = model_from_args(EvalSection, args, tasks=["humaneval"])
    assert ev.tasks == ["humaneval", "mbpp"] and ev.limit == 3 and ev.timeout_s == 4 and ev.backend == "hf"
    assert ev.allow_contaminated and ev.ngram == 8
    assert (args.backend, args.timeout) == ("hf", 900)  # the job's placement stays the command's own
    default = model_from_args(EvalSection, build_parser().parse_args(["eval", "run", "x"]), tasks=["humaneval"])
    assert default.tasks == ["humaneval"] and default == EvalSection(tasks=["humaneval"])
