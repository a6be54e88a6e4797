"""Approval tokens, the daily budget and the gate, on their own SQLite files."""

import time

import pytest

from mcp_server.approval import ApprovalError, Budget, TokenStore, decide


@pytest.fixture
def tokens(tmp_path):
    return TokenStore(tmp_path / "tokens.db")


@pytest.fixture
def budget(tmp_path, monkeypatch):
    monkeypatch.delenv("TUNEPACK_DAILY_BUDGET_USD", raising=False)
    return Budget(tmp_path / "budget.db")


ARGS = {"flavor": "a10g-small", "timeout_s": 1800}


def test_token_is_single_use_and_bound_to_the_action(tokens):
    token, expires = tokens.issue("jobs_submit", ARGS, 0.5)
    assert expires - time.time() == pytest.approx(600, abs=5)
    with pytest.raises(ApprovalError, match="different arguments"):
        tokens.redeem(token, "jobs_submit", {**ARGS, "timeout_s": 3600}, 0.5)
    with pytest.raises(ApprovalError, match="different arguments"):
        tokens.redeem(token, "pipeline_run", ARGS, 0.5)
    with pytest.raises(ApprovalError, match="different arguments"):
        tokens.redeem(token, "jobs_submit", ARGS, 0.75)
    tokens.redeem(token, "jobs_submit", ARGS, 0.5)
    with pytest.raises(ApprovalError, match="already used"):
        tokens.redeem(token, "jobs_submit", ARGS, 0.5)


def test_a_refused_token_names_what_differs_and_asks_for_a_new_quote(tokens):
    quoted = {**ARGS, "labels": {"team": "a"}}
    token, _ = tokens.issue("pipeline_run", quoted, 0.5)
    with pytest.raises(ApprovalError) as refused:
        tokens.redeem(token, "pipeline_run", {**ARGS, "labels": {"team": "b"}}, 0.5)
    said = str(refused.value)
    assert 'labels (quoted {"team": "a"}, now {"team": "b"})' in said and "timeout_s" not in said, said
    assert "fresh quote" in refused.value.fix
    with pytest.raises(ApprovalError, match=r"the tool \(pipeline_run quoted, now jobs_submit\).*the cost"):
        tokens.redeem(token, "jobs_submit", quoted, 0.75)
    tokens.redeem(token, "pipeline_run", quoted, 0.5)  # a refusal does not use the token up


def test_token_expires_and_unknown_tokens_are_refused(tokens):
    token, _ = tokens.issue("jobs_submit", ARGS, 0.5, now=1000.0)
    with pytest.raises(ApprovalError, match="expired"):
        tokens.redeem(token, "jobs_submit", ARGS, 0.5, now=1000.0 + 601)
    with pytest.raises(ApprovalError, match="not one this server issued"):
        tokens.redeem("tp-approve-made-up", "jobs_submit", ARGS, 0.5)


def test_tokens_survive_a_new_store_object(tmp_path):
    token, _ = TokenStore(tmp_path / "t.db").issue("jobs_submit", ARGS, 1.0)
    TokenStore(tmp_path / "t.db").redeem(token, "jobs_submit", ARGS, 1.0)


def test_budget_charges_refuses_and_reconciles(budget, tmp_path):
    budget.set_limit("p", 2.0)
    budget.charge("p", "job-1", 1.5, price_per_hour=3.0, replicas=1)
    with pytest.raises(ApprovalError, match=r"Budget refused: this job may cost up to \$1.00.*\$0.50 of its \$2.00"):
        budget.charge("p", "job-2", 1.0, price_per_hour=1.0, replicas=1)
    assert budget.reconcile("job-1", runtime_s=600) == 0.5  # 3 $/h for 10 minutes
    budget.charge("p", "job-2", 1.0, price_per_hour=1.0, replicas=1)
    status = Budget(tmp_path / "budget.db").status("p")  # a fresh object reads the same state
    assert (status.limit_usd, status.charged_usd, status.remaining_usd, status.open_charges) == (2.0, 1.5, 0.5, 1)
    assert budget.reconcile("job-1", 1) is None  # already final


def test_budget_is_per_project_and_per_day(budget):
    budget.set_limit("a", 1.0)
    budget.charge("a", "j1", 1.0, 1.0, 1, now=0)
    budget.charge("a", "j2", 1.0, 1.0, 1, now=86400 * 2)  # another day
    budget.charge("b", "j3", 5.0, 1.0, 1)  # default limit 10
    assert budget.status("b").limit_usd == 10.0


def test_release_and_rekey(budget):
    budget.charge("p", "pending-x", 1.0, 1.0, 1)
    budget.rekey("pending-x", "job-9")
    assert budget.open_job_ids() == ["job-9"]
    budget.charge("p", "pending-y", 1.0, 1.0, 1)
    budget.release("pending-y")
    assert budget.open_job_ids() == ["job-9"]


def test_gate_decisions(tokens):
    common = dict(cost_usd=0.5, summary="a job", tokens=tokens)
    assert decide("t", ARGS, needs_approval=False, elicited=None, approval_token=None, **common).status == "not_needed"
    assert decide("t", ARGS, needs_approval=True, elicited=True, approval_token=None, **common).via == "elicitation"
    with pytest.raises(ApprovalError, match="The human declined: a job"):
        decide("t", ARGS, needs_approval=True, elicited=False, approval_token=None, **common)
    quote = decide("t", ARGS, needs_approval=True, elicited=None, approval_token=None, **common)
    assert quote.status == "approval_required" and quote.approval_token in quote.message
    approved = decide("t", ARGS, needs_approval=True, elicited=None, approval_token=quote.approval_token, **common)
    assert approved.status == "approved" and approved.via == "token"
