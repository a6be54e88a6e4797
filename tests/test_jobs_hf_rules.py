"""What huggingface_hub itself checks about a job (jobs/hf_rules.py): each rule passes what tunepack really sends,
refuses a bad value with a message naming it, and is held to the library's own parser where the library has one
(the same accept/reject decisions on a table of inputs, and on generated ones), so a rule cannot drift from it."""

from __future__ import annotations

import re

import pytest
from huggingface_hub._jobs_api import JobHardware, _create_job_spec, _sanitize_job_name
from huggingface_hub.cli._cli_utils import SoftChoice, parse_env_map
from huggingface_hub.cli._uv_script_header import _as_str_table, _as_timeout
from huggingface_hub.cli.jobs import _parse_labels_map
from huggingface_hub.errors import CLIError
from huggingface_hub.utils._dotenv import load_dotenv
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_server.errors import JobError
from mcp_server.jobs import hf_rules
from mcp_server.jobs.hf_rules import (
    check_env_names,
    check_flavor,
    check_job,
    check_labels,
    check_secret_names,
    parse_timeout,
)
from mcp_server.jobs.pricing import hf_flavors

OFFLINE = [h.name for h in hf_flavors()]
LIBRARY_FLAVORS = [m.value for m in JobHardware]
RUN = "gemma-4-E2B-it-r16-lr0.0002-20261201-101010"
# what tunepack attaches (pipeline/run.py, sweeps/run.py, preflight): the name travels as the `name` label
SENT_LABELS = [
    {"project": "support-bot", "run": RUN, "config_hash": "3f9a1c2b7d4e5f60", "stage": "train",
     "output_repo": "alice/x", "name": RUN},
    {"project": "support-bot", "run": RUN, "stage": "eval", "sweep": "lr-grid-1a2b", "sweep_run": "r3",
     "name": f"eval-{RUN}"},
    {"sweep": "lr-grid-1a2b", "stage": "sweep", "slot": "none", "name": "sweep-lr-grid-1a2b"},
    {"stage": "preflight", "name": f"preflight-{RUN}", "output_repo": "alice/gemma-4-E2B-it-sft"},
]


def _refused(fn, *args) -> JobError:
    with pytest.raises(JobError) as caught:
        fn(*args)
    return caught.value


def _library_timeout(value) -> tuple[str, int | None]:
    """("ok", seconds) / ("unset", None) / ("error", None): what _create_job_spec makes of ``timeout``."""
    try:
        spec = _create_job_spec(image="python:3.12", command=["true"], env=None, secrets=None, flavor=None,
                                timeout=value)
    except (TypeError, ValueError, OverflowError):
        return "error", None
    return ("ok", spec["timeoutSeconds"]) if "timeoutSeconds" in spec else ("unset", None)


def _ours_timeout(value) -> tuple[str, int | None]:
    try:
        return "ok", parse_timeout(value)
    except JobError:
        return "error", None


# ---------------------------------------------------------------------------------------------------- flavor


@pytest.mark.parametrize("flavor", ["cpu-basic", "t4-small", "a10g-large", "a100-large", "h200", "l40sx1"])
def test_flavors_tunepack_uses_pass_offline_and_against_the_library_list(flavor):
    check_flavor(flavor, OFFLINE)
    check_flavor(flavor, LIBRARY_FLAVORS)


def test_h100_is_refused_with_the_closest_flavors_and_the_whole_list():
    error = _refused(check_flavor, "h100", OFFLINE)
    assert "'h100'" in error.problem and "h200" in error.problem
    assert error.fix.startswith("use one of: cpu-basic") and "a10g-large" in error.fix


@pytest.mark.parametrize(("flavor", "closest"), [("H200", "h200"), ("t4", "t4-small"), ("a10g", "a10g-small"),
                                                 ("a100", "a100-large"), ("cpu-basik", "cpu-basic")])
def test_a_near_miss_names_the_flavor_meant(flavor, closest):
    error = _refused(check_flavor, flavor, OFFLINE)
    assert f"'{flavor}'" in error.problem and closest in error.problem.split("closest are", 1)[1]


def test_an_empty_hardware_list_is_refused_rather_than_passing_anything():
    assert "No hardware list" in _refused(check_flavor, "cpu-basic", []).problem


def test_the_flavor_rule_agrees_with_the_library():
    # hf-apis.md line 24: "There is no `h100`"; JobHardware is the library's list of the Hub's flavors
    assert "h100" not in LIBRARY_FLAVORS
    for name in LIBRARY_FLAVORS:
        check_flavor(name, LIBRARY_FLAVORS)
    # tunepack's offline table may lag the library (a missing flavor is only refused), never invent one
    assert set(OFFLINE) <= set(LIBRARY_FLAVORS), set(OFFLINE) - set(LIBRARY_FLAVORS)
    # the library itself refuses nothing (why the check exists): the CLI's --flavor passes any name through
    assert SoftChoice(JobHardware).convert("h100", None, None) == "h100"
    assert _create_job_spec(image="x", command=["true"], env=None, secrets=None, flavor="h100",
                            timeout=None)["flavor"] == "h100"


# --------------------------------------------------------------------------------------------------- timeout


@pytest.mark.parametrize(("value", "seconds"), [
    (3600, 3600), (600, 600), ("600", 600), ("90s", 90), ("10m", 600), ("2h", 7200), ("1.5h", 5400), ("1d", 86400),
    (1.9, 1), ("0.5m", 30),
])
def test_timeouts_tunepack_sends_are_read_as_the_library_reads_them(value, seconds):
    assert parse_timeout(value) == seconds


@pytest.mark.parametrize("value", ["5x", "1.5", "5M", "h", "1 hour", "inf s", "1e400s", "nanm", float("inf"),
                                   float("nan"), [60]])
def test_a_timeout_the_library_cannot_read_is_refused_naming_it(value):
    error = _refused(parse_timeout, value)
    assert repr(value) in error.problem and "'30m'" in error.fix


@pytest.mark.parametrize("value", [0, 0.0, "", None])
def test_a_falsy_timeout_is_refused_because_the_library_would_send_none(value):
    error = _refused(parse_timeout, value)
    assert "would set no timeout" in error.problem
    assert _library_timeout(value) == ("unset", None)  # _create_job_spec: `if timeout:` drops it


TIMEOUT_TABLE = [3600, 1, 1.9, 0.5, -5, "300", " 300 ", "1_000", "90s", "10m", "2h", "1.5h", "1d", "0s", "-1h",
                 " 5m", "1e3s", "5x", "1.5", "5M", "5H", "h", "m", "", "1 hour", "inf s", "infs", "1e400s", "nanm",
                 "1,5h", "٣m", float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("value", TIMEOUT_TABLE)
def test_parse_timeout_decides_as_the_library_on_the_table(value):
    library = _library_timeout(value)
    ours = _ours_timeout(value)
    assert ours == (library if library[0] != "unset" else ("error", None)), value


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=12), st.text(alphabet="0123456789.-+e_ smhdSMHDx", max_size=8),
                 st.integers(min_value=-10**12, max_value=10**12), st.floats(allow_nan=True, allow_infinity=True)))
def test_parse_timeout_decides_as_the_library_on_generated_values(value):
    library = _library_timeout(value)
    assert _ours_timeout(value) == (library if library[0] != "unset" else ("error", None))


def test_a_bool_timeout_is_refused_as_the_clis_script_header_refuses_it():
    for value in (True, False):
        _refused(parse_timeout, value)
        with pytest.raises(CLIError):
            _as_timeout({"timeout": value})
    assert _as_timeout({"timeout": "2h"}) == "2h" and parse_timeout(_as_timeout({"timeout": 7200})) == 7200


# ---------------------------------------------------------------------------------------------------- labels


@pytest.mark.parametrize("labels", SENT_LABELS)
def test_labels_tunepack_sends_pass(labels):
    check_labels(labels)
    check_labels({k: v for k, v in labels.items() if k != "name"})


def test_no_labels_pass():
    check_labels({})
    check_labels(None)


def test_a_label_key_with_an_equals_sign_is_refused():
    error = _refused(check_labels, {"run=1": "x"})
    assert "'run=1'" in error.problem and "'run_1'" in error.fix


@pytest.mark.parametrize("labels", [{"steps": 20}, {"private": True}, {"run": None}, {3: "x"}])
def test_a_label_that_is_not_text_is_refused(labels):
    error = _refused(check_labels, labels)
    assert repr(next(iter(labels))) in error.problem and "strings" in error.problem


@pytest.mark.parametrize("name", ["my run", "alice/x", "run:1", "r\u00e9sum\u00e9", "a\nb", "lr=0.1"])
def test_a_job_name_outside_the_documented_pattern_is_refused_with_a_fixed_name(name):
    error = _refused(check_labels, {"name": name})
    assert repr(name) in error.problem
    fixed = re.search(r"e\.g\. '(.*)'\.$", error.fix).group(1)
    check_labels({"name": fixed})


def test_only_the_name_label_has_a_character_rule():
    # the library documents no rule for other label values: a repo id or a free text passes
    check_labels({"output_repo": "alice/x", "note": "lr 2e-4, r=16 / rank"})


LABEL_KEYS = ["project", "run", "config_hash", "output_repo", "sweep_run", "", "a b", "a:b", "a=b", "=", "x==y",
              "\u00e9t\u00e9", "k\nv"]


@pytest.mark.parametrize("key", LABEL_KEYS)
def test_the_label_key_rule_decides_as_the_clis_label_parser(key):
    # cli/jobs.py:_parse_labels_map reads `--label KEY=VALUE` up to the first '='
    round_trips = _parse_labels_map([f"{key}=v=1"]) == {key: "v=1"}
    try:
        check_labels({key: "v=1"})
        ours = True
    except JobError:
        ours = False
    assert ours == round_trips, key


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=10), st.text(max_size=10))
def test_the_label_key_rule_decides_as_the_clis_label_parser_on_generated_keys(key, value):
    round_trips = _parse_labels_map([f"{key}={value}"]) == {key: value}
    labels = {key: value} if key != "name" else {"other": value}
    try:
        check_labels(labels)
        ours = True
    except JobError:
        ours = False
    assert ours == (round_trips if key != "name" else True)


@pytest.mark.parametrize("value", ["x", "", 3, 1.5, True, None, ["a"]])
def test_label_value_types_decide_as_the_script_header(value):
    try:
        _as_str_table({"labels": {"k": value}}, "labels")
        library = True
    except CLIError:
        library = False
    try:
        check_labels({"k": value})
        ours = True
    except JobError:
        ours = False
    assert ours == library


def test_the_name_pattern_is_the_one_the_library_documents():
    documented = re.search(r"`(\^\[[^`]*\]\*\$)`", _sanitize_job_name.__doc__ or "")
    assert documented, "huggingface_hub no longer documents the job name pattern in _sanitize_job_name"
    assert hf_rules.JOB_NAME.pattern == documented.group(1)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_every_name_the_library_makes_passes(text):
    check_labels({"name": _sanitize_job_name(text)})


# ---------------------------------------------------------------------------------------------- secrets, env


def test_names_tunepack_sends_pass():
    check_secret_names(["HF_TOKEN", "WANDB_API_KEY", "OPENAI_API_KEY"])
    check_env_names(["TRACKIO_DIR", "HF_HUB_CACHE", "TUNEPACK_CACHE_BUCKET", "_PRIVATE", "x1"])
    check_secret_names([])
    check_env_names(None)


@pytest.mark.parametrize("name", ["HF-TOKEN", "1ST", "MY VAR", "", "export FOO", "A=B", "\u00c9T\u00c9", "A\n"])
def test_a_name_the_cli_would_drop_is_refused_with_a_usable_one(name):
    for check, what in ((check_secret_names, "secret"), (check_env_names, "environment variable")):
        error = _refused(check, [name])
        assert f"{what} name {name!r}" in error.problem
        fixed = re.search(r"e\.g\. '(.*)'\.$", error.fix).group(1)
        check([fixed])


ENV_NAMES = ["HF_TOKEN", "_", "_1", "a", "A1_b", "export", "1A", "A-B", "A B", " A", "A ", "#A", "A=B", "A#",
             "export A", "", "\u00e9", "A\tB", "A\nB", "A'"]


def _cli_reads(name: str) -> bool:
    """Whether `hf jobs run -e NAME=v` / `-s NAME=v` sends exactly that name (cli/_cli_utils.py:parse_env_map)."""
    return parse_env_map([f"{name}=v"]) == {name: "v"} and load_dotenv(f"{name}=v") == {name: "v"}


def _ours_reads(name: str) -> bool:
    try:
        check_env_names([name])
        check_secret_names([name])
        return True
    except JobError:
        return False


@pytest.mark.parametrize("name", ENV_NAMES)
def test_the_name_rule_decides_as_the_clis_env_parser(name):
    assert _ours_reads(name) == _cli_reads(name), name


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=8), st.text(alphabet="AZaz09_- =#'\"\t\nexport", max_size=10)))
def test_the_name_rule_decides_as_the_clis_env_parser_on_generated_names(name):
    assert _ours_reads(name) == (load_dotenv(f"{name}=v") == {name: "v"}), name


# --------------------------------------------------------------------------------------------------- the job


@pytest.mark.parametrize("labels", SENT_LABELS)
def test_a_job_tunepack_submits_passes_and_returns_its_timeout(labels):
    assert check_job("a10g-large", 3600, labels, ["HF_TOKEN"], ["TRACKIO_DIR"], OFFLINE) == 3600
    assert check_job(None, "2h", labels, ["HF_TOKEN"], [], OFFLINE) == 7200  # None: the library's cpu-basic
    labels = {k: v for k, v in labels.items() if k != "name"}
    assert check_job("cpu-basic", 600, labels, ["HF_TOKEN"], None, LIBRARY_FLAVORS, name=RUN) == 600


@pytest.mark.parametrize(("args", "named"), [
    (("h100", 3600, {}, [], [], OFFLINE), "'h100'"),
    (("t4-small", "1 hour", {}, [], [], OFFLINE), "'1 hour'"),
    (("t4-small", None, {}, [], [], OFFLINE), "None"),
    (("t4-small", 60, {"name": "my run"}, [], [], OFFLINE), "'my run'"),
    (("t4-small", 60, {"a=b": "c"}, [], [], OFFLINE), "'a=b'"),
    (("t4-small", 60, {}, ["HF-TOKEN"], [], OFFLINE), "'HF-TOKEN'"),
    (("t4-small", 60, {}, [], ["MY VAR"], OFFLINE), "'MY VAR'"),
])
def test_check_job_refuses_each_bad_field_naming_it(args, named):
    assert named in _refused(check_job, *args).problem


def test_a_name_and_a_name_label_together_are_refused_as_the_library_refuses_them():
    error = _refused(lambda: check_job("cpu-basic", 60, {"name": "a"}, [], [], OFFLINE, name="b"))
    assert "'b'" in error.problem and "'a'" in error.problem
    with pytest.raises(ValueError, match="cannot both be provided"):
        _create_job_spec(image="x", command=["true"], env=None, secrets=None, flavor=None, timeout=60,
                         name="b", labels={"name": "a"})
