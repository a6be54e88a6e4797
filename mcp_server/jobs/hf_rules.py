"""What huggingface_hub 2.4 itself checks or documents about a job's flavor, timeout, labels, secrets and env.

Pure functions, no network: each refuses a value with a ``JobError`` that names it and says what to do. Every
rule cites where it comes from: a huggingface_hub file and function (paths are relative to the installed
package, ``huggingface_hub/``) or a line of ``shared/reference/hf-apis.md``. Nothing else is checked: the
library validates very little on the client side, and what it does not check is listed here, not invented.

- **flavor** — the library checks nothing. ``hf_api.py:HfApi.run_job`` documents "See [`JobHardware`] for
  possible values", ``_jobs_api.py:_create_job_spec`` sends any string (``cpu-basic`` when none is given), and
  the ``hf jobs`` CLI's ``--flavor`` is a ``SoftChoice(JobHardware)`` that passes unknown names through
  (``cli/_cli_utils.py:SoftChoice``), so a wrong name is only found out by the Hub. hf-apis.md line 24 lists
  the flavors ("There is no `h100`"). So ``check_flavor`` only checks membership in the hardware list the
  caller passes (``list_jobs_hardware()`` names live, ``pricing.hf_flavors()`` offline).
- **timeout** — ``_jobs_api.py:_create_job_spec`` is the one parser (``run_job``, ``run_uv_job``,
  ``create_scheduled_job`` and the CLI's ``--timeout`` all reach it); ``parse_timeout`` mirrors it exactly:
  a number is seconds (``int()``, so 1.9 → 1), a string ending in s/m/h/d is ``int(float(rest) × unit)``,
  any other string goes through ``int()``. What it raises on, this refuses. It checks no range: ``"-1h"``
  (-3600) and ``"0s"`` (0) are sent as they are, and are not refused here either. Two refusals are not the
  library's own: a falsy timeout (0, 0.0, "", None), which ``if timeout:`` drops so that no
  ``timeoutSeconds`` is sent and the job gets the Hub's default — the caller asked for a bound and would get
  none (tunepack bounds every paid job: ``pricing.estimate``); and a bool, which the CLI's script-header
  reader refuses (``cli/_uv_script_header.py:_as_timeout``) though ``int(True)`` would give 1.
- **labels** — values (and keys) are strings (``HfApi.run_job``'s ``labels: dict[str, str]``; the script
  header refuses any other value: ``cli/_uv_script_header.py:_as_str_table``). A key cannot hold ``=``: the
  CLI reads ``--label KEY=VALUE`` up to the first ``=`` (``cli/jobs.py:_parse_labels_map``) and
  ``HfApi.list_jobs`` filters with ``label=KEY=VALUE`` (hf-apis.md line 15), so such a key cannot be written
  or found again. The job's name is the ``name`` label (``_create_job_spec``), which must match
  ``^[a-zA-Z0-9._-]*$`` (``_jobs_api.py:_sanitize_job_name``, docstring); a ``name`` given besides a ``name``
  label is a ValueError there. Not validated by the library: the characters, length or number of other
  keys and values, an empty key or value, a value holding ``=`` (accepted, though ``hf jobs ls --label
  k=a=b`` cannot filter on it: ``cli/jobs.py`` splits the filter on every ``=``).
- **secret and env names** — the Python API passes them unchecked (``_create_job_spec``: ``env or {}``, the
  secrets dict as given; hf-apis.md line 18: "Secrets and env are plain dicts"). The CLI reads ``-e/--env``
  and ``-s/--secrets`` with ``cli/_cli_utils.py:parse_env_map`` → ``utils/_dotenv.py:load_dotenv``, whose key
  is ``[A-Za-z_][A-Za-z0-9_]*``: any other name is silently dropped. That is the rule here. Not validated:
  name length, case, reserved names, a name in both env and secrets, the values (the CLI only fails on a bare
  ``--secrets NAME`` missing from the local environment, ``cli/jobs.py:_parse_secrets_map``: a value check
  ``HfBackend`` makes itself).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping

from ..errors import JobError

# _jobs_api.py:_create_job_spec — `flavor or JobHardware.CPU_BASIC`
DEFAULT_FLAVOR = "cpu-basic"
# _jobs_api.py:_create_job_spec — `time_units_factors`
TIME_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 3600 * 24}
# _jobs_api.py:_sanitize_job_name, docstring: "Job names must match `^[a-zA-Z0-9._-]*$`"
JOB_NAME = re.compile(r"^[a-zA-Z0-9._-]*$")
# utils/_dotenv.py:load_dotenv — the key group of `line_pattern` (used by cli/_cli_utils.py:parse_env_map)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_TIMEOUT_FIX = "pass a number of seconds (3600) or a number with s, m, h or d ('90s', '30m', '2h', '1d')."


def check_flavor(flavor: str, known: Iterable[str]) -> None:
    """``flavor`` must be one of ``known`` (the hardware list, hf-apis.md line 24): the library sends any name
    unchecked (cli/_cli_utils.py:SoftChoice, _jobs_api.py:_create_job_spec), so only the Hub would find it out."""
    names = list(known)
    if not names:
        raise JobError(f"No hardware list to check the flavor '{flavor}' against.",
                       "pass the names from list_jobs_hardware() (live) or mcp_server.jobs.pricing.hf_flavors().")
    if flavor in names:  # case-sensitive, as the CLI's SoftChoice(case_sensitive=True)
        return
    close = _closest(str(flavor), names)
    hint = f"; the closest are {', '.join(close)}" if close else ""
    raise JobError(f"There is no HF Jobs flavor '{flavor}'{hint}.",
                   f"use one of: {', '.join(names)} (`tunepack jobs hardware --backend hf` lists them with prices).")


def _closest(flavor: str, names: list[str]) -> list[str]:
    """The same name in lowercase, else names it begins (t4 → t4-small), else difflib's nearest (h100 → h200)."""
    lower = flavor.lower()
    if lower in names:
        return [lower]
    starts = [n for n in names if lower and n.startswith(lower)]
    return (starts or difflib.get_close_matches(lower, names, n=4, cutoff=0.5))[:4]


def parse_timeout(value: int | float | str | None) -> int:
    """Seconds, read exactly as _jobs_api.py:_create_job_spec reads ``timeout`` (see the module docstring)."""
    if isinstance(value, bool):  # cli/_uv_script_header.py:_as_timeout refuses a bool
        raise JobError(f"The timeout {value!r} is a bool, not a duration.", _TIMEOUT_FIX)
    if not value:  # _create_job_spec: `if timeout:` — a falsy one sends no timeoutSeconds at all
        raise JobError(f"The timeout {value!r} would set no timeout: huggingface_hub drops a falsy timeout and the "
                       "job would run for the Hub's default.", _TIMEOUT_FIX)
    try:
        if isinstance(value, str) and value[-1] in TIME_UNITS:  # _create_job_spec: the unit suffix
            return int(float(value[:-1]) * TIME_UNITS[value[-1]])
        return int(value)  # _create_job_spec: anything else is int(timeout)
    except (TypeError, ValueError, OverflowError):
        raise JobError(f"The timeout {value!r} is not a duration huggingface_hub can read: {_why(value)}.",
                       _TIMEOUT_FIX) from None


def _why(value: object) -> str:
    if isinstance(value, str):
        return ("it reads a string as a whole number of seconds ('300') or as a finite number followed by a "
                "lowercase s, m, h or d ('30m', '1.5h')")
    if isinstance(value, float) and not math.isfinite(value):
        return "the number is not finite"
    return f"a {type(value).__name__} is neither a number nor a string"


def check_labels(labels: Mapping[str, str] | None) -> None:
    """String keys and values (HfApi.run_job's ``dict[str, str]``, cli/_uv_script_header.py:_as_str_table), no
    ``=`` in a key (cli/jobs.py:_parse_labels_map, HfApi.list_jobs), and a ``name`` label that matches
    ``^[a-zA-Z0-9._-]*$`` (_jobs_api.py:_sanitize_job_name)."""
    for key, value in (labels or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise JobError(f"The job label {key!r}: {value!r} is not a string pair; HF Jobs labels are strings.",
                           f"pass the label as text, e.g. {str(key)!r}: {str(value)!r}.")
        if "=" in key:
            raise JobError(f"The job label key {key!r} contains '='; huggingface_hub reads a label as KEY=VALUE up "
                           "to the first '=', so the job could not be found by this label.",
                           f"use a key without '=', e.g. {key.replace('=', '_')!r}.")
    if labels and "name" in labels:
        _check_name(labels["name"])


def _check_name(name: str) -> None:
    """_jobs_api.py:_sanitize_job_name, docstring: job names must match ``^[a-zA-Z0-9._-]*$``."""
    if JOB_NAME.fullmatch(name):
        return
    bad = sorted(set(re.sub(r"[a-zA-Z0-9._-]", "", name)))
    raise JobError(f"The job name {name!r} holds characters HF Jobs does not allow in a name ({''.join(bad)!r}); "
                   "a name may hold only letters, digits, '.', '_' and '-'.",
                   f"rename it (tracking.run_name, or the job's name), e.g. {re.sub(r'[^a-zA-Z0-9._-]', '-', name)!r}.")


def _check_names(names: Iterable[str] | None, what: str, flag: str) -> None:
    """utils/_dotenv.py:load_dotenv (behind cli/_cli_utils.py:parse_env_map): ``[A-Za-z_][A-Za-z0-9_]*``."""
    for name in names or []:
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            fixed = re.sub(r"[^A-Za-z0-9_]", "_", str(name))
            fixed = fixed if fixed[:1] and not fixed[0].isdigit() else f"_{fixed}"
            raise JobError(f"The {what} name {name!r} is not a variable name huggingface_hub reads: `hf jobs {flag}` "
                           "takes [A-Za-z_][A-Za-z0-9_]* and silently drops any other.",
                           f"rename it to letters, digits and '_', not starting with a digit, e.g. {fixed!r}.")


def check_secret_names(names: Iterable[str] | None) -> None:
    """Secret names as the CLI's ``-s/--secrets`` reads them (utils/_dotenv.py:load_dotenv)."""
    _check_names(names, "secret", "run --secrets")


def check_env_names(names: Iterable[str] | None) -> None:
    """Environment variable names as the CLI's ``-e/--env`` reads them (utils/_dotenv.py:load_dotenv)."""
    _check_names(names, "environment variable", "run --env")


def check_job(flavor: str | None, timeout: int | float | str | None, labels: Mapping[str, str] | None,
              secret_names: Iterable[str] | None, env_names: Iterable[str] | None, known_flavors: Iterable[str],
              *, name: str | None = None) -> int:
    """Every rule above; the timeout in seconds. ``flavor`` None means cpu-basic (_create_job_spec's default).
    ``name``: the job name passed beside ``labels`` (as ``run_job(name=…)``); it becomes the ``name`` label."""
    if name is not None:
        if labels and "name" in labels:  # _jobs_api.py:_create_job_spec raises ValueError on both
            raise JobError(f"The job has a name ({name!r}) and a 'name' label ({labels['name']!r}); "
                           "huggingface_hub refuses both.", "drop the 'name' label: the name is stored as that label.")
        labels = {**(labels or {}), "name": name}
    check_flavor(flavor or DEFAULT_FLAVOR, known_flavors)
    seconds = parse_timeout(timeout)
    check_labels(labels)
    check_secret_names(secret_names)
    check_env_names(env_names)
    return seconds
