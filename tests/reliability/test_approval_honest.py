"""[18] The same-account seatbelt, tried as a hostile agent would, over stdio with the real MCP client against the
Jobs stand-in: a client that can elicit is always asked (a token it passes approves nothing), a "no" ends the
quote, a token is good only in the MCP session that was quoted, a paid CLI command without a terminal is refused
unless --yes, one daily cap holds across project names, and a sweep's retries stay inside what was approved."""

import json
import os
import pty
import shlex
import shutil
import subprocess
import sys
import time

import anyio
import mcp_types as t
import pytest
from mcp import Client, StdioServerParameters
from support.common import REPO, run_cli, short_conversation, write_jsonl

from mcp_server.approval import ApprovalError, Asked, Budget, TokenStore, decide

PAID = {"script_path": str(REPO / "bench" / "spine.py"), "backend": "hf", "flavor": "a10g-small",
        "timeout_s": 1800, "project": "honest"}


def _params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "serve"],
                                 env=os.environ.copy(), cwd=str(REPO))


def _text(result) -> str:
    return result.content[0].text if result.content else ""


def _answer(action: str, asked: list):
    async def callback(context, request):
        asked.append(request.message)
        return t.ElicitResult(action=action, content={"approve": True} if action == "accept" else None)
    return callback


def _posts(hub) -> int:
    return len(hub.requests("POST", "/api/jobs/alice"))


def test_an_eliciting_client_is_asked_and_a_no_ends_the_quote(hub):
    """Before: a declined client passed a token minted in another session and the job was POSTed."""
    asked: list[str] = []

    async def flow():
        async with Client(_params(), mode="legacy") as quiet, \
                Client(_params(), mode="legacy", elicitation_callback=_answer("decline", asked)) as asking:
            quote = (await quiet.call_tool("jobs_submit", PAID)).structured_content
            token = quote["decision"]["approval_token"]
            declined = await asking.call_tool("jobs_submit", {**PAID, "approval_token": token})
            after = await quiet.call_tool("jobs_submit", {**PAID, "approval_token": token})
            return declined, after

    declined, after = anyio.run(flow)
    assert asked and "a10g-small" in asked[0]  # the token did not spare the question
    assert declined.is_error and "The human declined" in _text(declined)
    assert after.is_error and "ended: the human declined it" in _text(after)
    assert _posts(hub) == 0


def test_a_token_is_good_only_in_the_session_that_was_quoted(hub):
    async def flow():
        async with Client(_params(), mode="legacy") as first, Client(_params(), mode="legacy") as second:
            token = (await first.call_tool("jobs_submit", PAID)).structured_content["decision"]["approval_token"]
            elsewhere = await second.call_tool("jobs_submit", {**PAID, "approval_token": token})
            here = await first.call_tool("jobs_submit", {**PAID, "approval_token": token})
            return elsewhere, here

    elsewhere, here = anyio.run(flow)
    assert elsewhere.is_error and "another MCP session" in _text(elsewhere)
    assert not here.is_error and here.structured_content["decision"]["via"] == "token"
    assert _posts(hub) == 1


def test_a_token_binds_the_labels_of_the_run(hub, tmp_path):
    """Before: a pipeline_run quote's token started jobs_submit(config_path, labels={"stage": "eval"}), and a
    jobs_submit quote for labels L started the run with labels L': the labels (they name the run's stage, project
    and run in the job list, and settling a finished job reads them) were not part of what the human approved."""
    data = write_jsonl(tmp_path / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
    config = tmp_path / "labels.yaml"
    config.write_text(json.dumps({"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(data)},
                                  "training": {"max_steps": 20}, "tracking": {"project": "honest-labels"},
                                  "output": {"name": "honest-labels"}}))
    run = {"config_path": str(config), "backend": "hf", "flavor": "t4-small", "timeout_s": 3600}

    async def flow():
        async with Client(_params(), mode="legacy") as client:
            quote = (await client.call_tool("pipeline_run", run)).structured_content
            relabelled = await client.call_tool("jobs_submit", {**run, "labels": {"stage": "eval"},
                                                                "approval_token": quote["decision"]["approval_token"]})
            quote = (await client.call_tool("jobs_submit", {**run, "labels": {"team": "a"}})).structured_content
            token = quote["decision"]["approval_token"]
            other = await client.call_tool("jobs_submit", {**run, "labels": {"team": "b"}, "approval_token": token})
            quoted = await client.call_tool("jobs_submit", {**run, "labels": {"team": "a"}, "approval_token": token})
            return relabelled, other, quoted

    relabelled, other, quoted = anyio.run(flow)
    assert relabelled.is_error and 'labels (quoted {}, now {"stage": "eval"})' in _text(relabelled), _text(relabelled)
    assert other.is_error and 'labels (quoted {"team": "a"}, now {"team": "b"})' in _text(other), _text(other)
    assert "fresh quote" in _text(other)
    assert not quoted.is_error and quoted.structured_content["decision"]["via"] == "token", _text(quoted)
    assert _posts(hub) == 1  # only the call with the quoted labels started a job
    assert hub.requests("POST", "/api/jobs/alice")[0].body["labels"]["team"] == "a"


def test_tokens_never_approve_where_the_client_can_elicit(tmp_path):
    tokens = TokenStore(tmp_path / "q.db")
    args = {"flavor": "a10g-small"}
    token, _ = tokens.issue("jobs_submit", args, 0.5, session="s1")
    with pytest.raises(ApprovalError, match="only their answer"):
        decide("jobs_submit", args, cost_usd=0.5, needs_approval=True, summary="a job", elicited=None,
               approval_token=token, tokens=tokens, asked=Asked(can_elicit=True, session="s1"))
    decision = decide("jobs_submit", args, cost_usd=0.5, needs_approval=True, summary="a job", elicited=None,
                      approval_token=token, tokens=tokens, asked=Asked(session="s1"))
    assert decision.via == "token"


def test_custodian_quotes_wait_for_the_custodian(tmp_path):
    tokens = TokenStore(tmp_path / "q.db")
    args, custodian = {"flavor": "a10g-small"}, Asked(custodian=True, session="s")
    quote = decide("jobs_submit", args, cost_usd=0.5, needs_approval=True, summary="a job", elicited=True,
                   approval_token=None, tokens=tokens, asked=custodian)  # a yes from the client is not enough
    assert quote.status == "approval_required" and "tunepack approve" in quote.message
    with pytest.raises(ApprovalError, match="custodian has not approved"):
        decide("jobs_submit", args, cost_usd=0.5, needs_approval=True, summary="a job", elicited=None,
               approval_token=quote.approval_token, tokens=tokens, asked=custodian)
    tokens.approve(quote.approval_token)
    assert decide("jobs_submit", args, cost_usd=0.5, needs_approval=True, summary="a job", elicited=None,
                  approval_token=quote.approval_token, tokens=tokens, asked=custodian).via == "custodian"


def _submit_cli(*extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcp_server.cli", "jobs", "submit", "--backend", "hf", "--flavor",
                           "a10g-small", "--timeout", "1800", "--project", "honest-cli", *extra,
                           str(REPO / "bench" / "spine.py")], cwd=REPO, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=os.environ.copy(), timeout=300)


def test_a_paid_cli_command_without_a_terminal_needs_yes(hub):
    """Before: `tunepack jobs submit --backend hf … </dev/null` from an agent's shell submitted with no prompt."""
    refused = _submit_cli()
    assert refused.returncode == 1 and "No terminal" in refused.stderr and "--yes" in refused.stderr
    assert _posts(hub) == 0
    done = _submit_cli("--yes")
    assert done.returncode == 0, done.stderr
    assert _posts(hub) == 1
    free = subprocess.run([sys.executable, "-m", "mcp_server.cli", "budget", "set", "honest-cli", "99"], cwd=REPO,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, env=os.environ.copy())
    assert free.returncode == 1 and "No terminal" in free.stderr  # nor does an agent raise its own budget


def test_a_pseudo_terminal_passes_the_no_terminal_rule(hub):
    """The limit the README states, shown as it is: the no-terminal rule reads whether stdin is a terminal, and a
    pseudo-terminal the agent makes itself is one. `script -qec "tunepack jobs submit …"` submits a paid job without
    --yes, and a pty from Python's own `pty` module raises the agent's budget. Nothing in the same OS account can
    tell that from a person typing; only the custodian mode (another OS account) holds (test_custodian.py)."""
    env = os.environ.copy()
    if shutil.which("script"):
        command = shlex.join([sys.executable, "-m", "mcp_server.cli", "jobs", "submit", "--backend", "hf",
                              "--flavor", "a10g-small", "--timeout", "1800", "--project", "honest-pty",
                              str(REPO / "bench" / "spine.py")])
        done = subprocess.run(["script", "-qec", command, "/dev/null"], cwd=REPO, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env=env, timeout=300)
        assert done.returncode == 0 and "No terminal" not in done.stdout + done.stderr, done.stdout[-2000:]
        assert _posts(hub) == 1  # the paid job went out with no --yes and no person
    leader, follower = pty.openpty()
    try:
        raised = subprocess.run([sys.executable, "-m", "mcp_server.cli", "budget", "set", "honest-pty", "99"],
                                cwd=REPO, stdin=follower, capture_output=True, text=True, env=env, timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    assert raised.returncode == 0 and json.loads(raised.stdout)["limit_usd"] == 99, raised.stderr


def test_the_docs_say_what_the_no_terminal_rule_does_not_stop():
    def text(rel: str) -> str:
        return " ".join((REPO / rel).read_text(encoding="utf-8").split())  # lines joined: wrapping does not matter

    section = text("README.md").split(" ## Security ", 1)[1].split(" ## ", 1)[0]
    for said in ("stops an agent's plain non-interactive shell call", "does **not** stop an agent that makes a "
                 "pseudo-terminal itself", "script -qec", "pty.spawn", "Only custodian mode holds against that",
                 "another OS account"):
        assert said in section, said
    assert "What it does not stop: an agent that makes a pseudo-terminal itself" in text("docs/security.md")
    assert "pseudo-terminal the agent makes itself" in text("docs/commands.md")
    assert "a pseudo-terminal you make" in text("agents.md")


def test_one_cap_across_project_names(tmp_path, monkeypatch):
    """Before: $9 on each of three fresh names = $27 in one day."""
    monkeypatch.delenv("TUNEPACK_DAILY_BUDGET_USD", raising=False)
    monkeypatch.delenv("TUNEPACK_DAILY_TOTAL_USD", raising=False)
    budget = Budget(tmp_path / "b.db")
    budget.charge("first", "j1", 9.0, 9.0, 1)
    with pytest.raises(ApprovalError, match="all projects together have \\$1.00 of the \\$10.00 daily cap"):
        budget.charge("second", "j2", 9.0, 9.0, 1)
    budget.set_limit("big", 30.0)  # a person raised one project: the cap follows the largest limit unless set
    budget.charge("big", "j3", 20.0, 20.0, 1)
    budget.set_total(29.5)
    with pytest.raises(ApprovalError, match="daily cap"):
        budget.charge("big", "j4", 1.0, 1.0, 1)
    assert budget.status("big").remaining_usd == 0.5 and budget.status("big").total_charged_usd == 29.0


def test_budget_cli_total(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEPACK_HOME", str(tmp_path / "home"))  # the session's shared budget stays as it is
    shown = json.loads(run_cli("budget", "set", "--total", "12.5", "--yes").stdout)
    assert shown["total_limit_usd"] == 12.5
    bad = run_cli("budget", "set", "--total", "-3", "--yes")
    assert bad.returncode == 1 and "0 or more" in bad.stderr


def test_a_sweep_retry_stays_inside_the_approved_worst_case(hub, tmp_path):
    """Before: a sweep approved for 1 run ($1.00 worst case) started 4 GPU jobs through infrastructure retries."""
    from support.common import short_conversation, write_jsonl
    from support.standin.jobs_runner import iso
    from support.sweeps import hub_base, unique

    from mcp_server.approval import Consent
    from mcp_server.sweeps import read_state, submit_sweep, sweep_dir
    from mcp_server.sweeps.controller import Controller

    project = unique("retry-cap")
    data = write_jsonl(tmp_path / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
    spec = {"name": "capped", "base": hub_base(data, project), "backend": "hf", "flavor": "a10g-small",
            "timeout_s": 3600, "retries": 3, "grid": {"training.learning_rate": [1e-4]}}
    quote = submit_sweep(spec, start=False)
    assert quote.plan.total_worst_case_usd == pytest.approx(1.0)
    sweep = submit_sweep(spec, consent=Consent(token=quote.decision.approval_token), start=False)
    ctl = Controller(sweep_dir(sweep.sweep_id), poll_s=0)
    for attempt in range(4):
        ctl.step()
        jobs = list(hub.state.jobs)
        if len(jobs) <= attempt:
            break
        job = jobs[-1]
        hub.set_stage(job, "ERROR", "Job timed out")  # lost to the infrastructure…
        hub.state.jobs[job]["startedAt"] = iso(time.time() - 3000)  # …after 50 of its 60 minutes
    ctl.step()
    run = read_state(sweep_dir(sweep.sweep_id)).run("r01")
    assert len(hub.state.jobs) == 1 and run.status == "failed" and run.failure == "budget"
    assert "retry not started" in run.error and "$1.00" in run.error


def test_a_killed_callers_reservation_is_replaced_not_added(tmp_path, monkeypatch):
    """Before: a sweep controller killed between reserving and submitting left its worst case reserved all day;
    34 kills used up a project's $10 with one job run."""
    monkeypatch.delenv("TUNEPACK_DAILY_BUDGET_USD", raising=False)
    budget = Budget(tmp_path / "b.db")
    for _ in range(30):  # thirty restarts of the same attempt
        budget.charge("p", "pending-sweep-s1-r01-1", 0.4, 0.4, 1)
    assert budget.status("p").charged_usd == 0.4
    budget.rekey("pending-sweep-s1-r01-1", "hf/job-1")  # the restarted controller adopts the job it finds
    budget.charge("p", "pending-sweep-s1-r02-1", 0.4, 0.4, 1)
    assert budget.status("p").charged_usd == 0.8 and sorted(budget.open_job_ids()) == ["hf/job-1",
                                                                                         "pending-sweep-s1-r02-1"]
