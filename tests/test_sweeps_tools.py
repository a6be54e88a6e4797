"""The sweep tools over MCP (stdio): plan, argument errors, a paid HF sweep approved with a token and
then canceled (the controller stops, the canary's HF job is canceled, the ledger says crash)."""

import time

from mcp_server.ledger import Ledger
from support.sweeps import hub_base, tiny_base, unique
from test_server import ok, session, text


def test_plan_and_errors():
    async def flow(client):
        plan = ok(await client.call_tool("sweep_plan", {"spec_path": "examples/sweep.yaml"}))
        neither = await client.call_tool("sweep_submit", {})
        unknown = await client.call_tool("sweep_status", {"sweep_id": "nope"})
        return plan, neither, unknown

    plan, neither, unknown = session(flow)
    assert plan["total_runs"] == 4 and plan["canary"]["run"] == "r02" and plan["runs"][0]["launch"] == "python train.py"
    assert neither.is_error and "exactly one of spec_path or spec" in text(neither)
    assert unknown.is_error and "no sweep 'nope'" in text(unknown)


def test_paid_hf_sweep_token_then_cancel(hub, short_data):
    project = unique("tools-hf")
    spec = {"name": "paid", "base": hub_base(short_data, project), "backend": "hf", "flavor": "t4-small",
            "timeout_s": 3600, "budget_usd": 2, "grid": {"lora.r": [8, 16]}}

    async def flow(client):
        quote = ok(await client.call_tool("sweep_submit", {"spec": spec}))
        token = quote["decision"]["approval_token"]
        started = ok(await client.call_tool("sweep_submit", {"spec": spec, "approval_token": token}))
        deadline = time.time() + 60
        while not hub.state.jobs and time.time() < deadline:
            time.sleep(0.3)
        status = ok(await client.call_tool("sweep_status", {"sweep_id": started["sweep_id"]}))
        canceled = ok(await client.call_tool("sweep_cancel", {"sweep_id": started["sweep_id"]}))
        return quote, started, status, canceled

    quote, started, status, canceled = session(flow)
    assert quote["status"] == "approval_required" and "up to $0.80" in quote["next_step"]
    assert started["status"] == "submitted" and started["decision"]["via"] == "token"
    assert status["controller"]["state"] == "alive"
    (job_id,) = hub.state.jobs  # the canary alone
    assert hub.state.jobs[job_id]["labels"]["sweep"] == started["sweep_id"]
    assert canceled["status"] == "canceled" and canceled["controller"]["state"] == "finished"
    assert hub.requests("POST", f"/api/jobs/alice/{job_id}/cancel")
    assert {e.status for e in Ledger(project).list()} == {"crash"}


def test_results_stay_small_for_a_large_sweep(short_data):
    spec = {"name": "big", "base": tiny_base(short_data, unique("big")),
            "grid": {"training.learning_rate": [0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.03, 0.05],
                     "lora.r": [4, 8, 16, 32, 64]}}

    async def flow(client):
        return ok(await client.call_tool("sweep_plan", {"spec": spec}))

    plan = session(flow)  # ok() asserts the result is under ~8 KB
    assert plan["total_runs"] == 40 and len(plan["runs"]) < 40 and "more runs not shown" in plan["notes"][-1]
