import pytest

from mcp_server.errors import JobError
from mcp_server.jobs import estimate, hf_flavors


def test_flavor_table_is_complete_and_cpu_flavors_are_free_of_approval():
    names = {h.name for h in hf_flavors()}
    assert {"cpu-basic", "t4-small", "a10g-large", "a100-large", "h200"} <= names and "h100" not in names
    assert all(h.price_per_hour_usd > 0 for h in hf_flavors())


def test_worst_case_and_expected_cost():
    quote = estimate("hf", "a100-large", timeout_s=7200, replicas=2, expected_s=3600)
    assert quote.worst_case_usd == pytest.approx(2.5 * 2 * 2) and quote.expected_usd == pytest.approx(5.0)
    assert quote.paid and quote.needs_approval


def test_cpu_costs_money_but_needs_no_approval_and_local_is_free():
    cpu = estimate("hf", "cpu-upgrade", timeout_s=3600)
    assert cpu.paid and not cpu.needs_approval
    local = estimate("local", None, None)
    assert local.worst_case_usd == 0 and not local.paid and not local.needs_approval


@pytest.mark.parametrize("backend, flavor, timeout, needle", [
    ("hf", "h100", 60, "Unknown flavor 'h100'"),
    ("hf", "t4-small", None, "needs a timeout"),
    ("moon", None, 60, "Unknown job backend 'moon'"),
])
def test_bad_quotes(backend, flavor, timeout, needle):
    with pytest.raises(JobError, match=needle):
        estimate(backend, flavor, timeout)
