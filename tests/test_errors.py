"""The error tree: every exception class the package defines is reachable from ``mcp_server.errors``, and
every agent-facing one carries a problem and a fix."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import mcp_server
from mcp_server import errors


def _package_exceptions() -> dict[str, type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(mcp_server.__path__, prefix="mcp_server."):
        if ".assets" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.startswith("mcp_server"):
                found[name] = obj
    return found


def test_every_error_class_is_listed_in_errors_py():
    found = _package_exceptions()
    assert len(found) >= 20  # the walk saw the whole package (TunepackError and its subclasses, job-side errors)
    missing = sorted(name for name, cls in found.items() if getattr(errors, name, None) is not cls)
    assert not missing, f"add these to (or re-export them from) mcp_server/errors.py: {missing}"


def test_agent_facing_errors_say_problem_and_fix():
    for name, cls in _package_exceptions().items():
        if issubclass(cls, errors.TunepackError) and cls is not errors.TunepackError:
            params = inspect.signature(cls.__init__).parameters
            assert "problem" in params and "fix" in params, name
    err = errors.SweepNotFound("No sweep 'x'.", "run `tunepack sweep status` without an id.")
    assert str(err) == "No sweep 'x'. Fix: run `tunepack sweep status` without an id."
    assert err.to_dict()["kind"] == "sweep"


def test_unknown_attribute_is_an_attribute_error():
    try:
        errors.NoSuchError  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchError" in str(exc)
    else:
        raise AssertionError("errors.NoSuchError resolved")
