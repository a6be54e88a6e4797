"""The MCP server over stdio with the real MCP client: schemas, every tool, errors, approval,
budget, and job-store recovery after the server is killed."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import mcp_types as t
import pytest
from mcp import Client, StdioServerParameters

from support.common import REPO, run_cli

EXPECTED_TOOLS = {
    "pipeline_validate", "pipeline_render", "pipeline_preflight", "pipeline_run",
    "jobs_submit", "jobs_status", "jobs_logs", "jobs_list", "jobs_cancel", "jobs_wait", "jobs_hardware", "jobs_cost",
    "budget_status", "tracking_start", "tracking_log", "tracking_finish", "tracking_projects", "tracking_runs",
    "tracking_summary", "tracking_compare", "tracking_plot", "registry_push", "registry_list",
    "skills_list", "skills_read", "skills_add_pitfall", "data_inspect", "data_mask_preview",
    "viewer_splits", "viewer_rows", "viewer_search", "viewer_filter", "viewer_statistics", "viewer_size",
    "viewer_traces",
}
EXPECTED_TOOLS |= {"registry_publish"}
EXPECTED_TOOLS |= {"traces_convert"}
EXPECTED_TOOLS |= {"traces_push"}
EXPECTED_TOOLS |= {"eval_start", "eval_results", "eval_ladder"}
EXPECTED_TOOLS |= {"loop_cycle", "loop_status", "loop_schedule", "loop_sync"}
EXPECTED_TOOLS |= {"ledger_propose", "ledger_claim", "ledger_record", "ledger_list", "ledger_report"}
EXPECTED_TOOLS |= {"research_models", "research_datasets", "research_papers", "research_paper"}
EXPECTED_TOOLS |= {"results_readme", "grpo_prompts", "dpo_pairs"}
EXPECTED_TOOLS |= {"sweep_plan", "sweep_submit", "sweep_status", "sweep_select", "sweep_report", "sweep_cancel"}
PNG_MAGIC = b"\x89PNG"


def params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "serve", *extra],
                                 env=os.environ.copy(), cwd=str(REPO))


def session(fn, mode="legacy", elicit=None, extra=()):
    """Run ``fn(client)`` against a fresh stdio server."""
    async def main():
        async with Client(params(*extra), mode=mode, elicitation_callback=elicit) as client:
            return await fn(client)
    return anyio.run(main)


def text(result) -> str:
    return result.content[0].text if result.content else ""


def ok(result) -> dict:
    assert not result.is_error, text(result)
    assert len(json.dumps(result.structured_content)) < 9000, "results are capped near 8 KB"
    return result.structured_content


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory, short_data) -> Path:
    folder = tmp_path_factory.mktemp("server-config")
    path = folder / "tiny.yaml"
    path.write_text(json.dumps({
        "model": {"name": "tiny:qwen3"}, "data": {"path": str(short_data)},
        "training": {"max_length": 128, "max_steps": 8, "logging_steps": 2, "learning_rate": 0.005,
                     "gradient_checkpointing": False},
        "tracking": {"project": "server-tests"}, "output": {"name": "server-tiny"}}))
    return path


async def wait_done(client, job_id, progress=None, rounds=30) -> dict:
    for _ in range(rounds):
        view = ok(await client.call_tool("jobs_wait", {"job_id": job_id, "timeout_s": 20}, progress_callback=progress))
        if view["job"]["stage"] in ("COMPLETED", "ERROR", "CANCELED"):
            return view
    raise AssertionError(f"job {job_id} did not finish")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_tools_and_schemas(mode):
    async def check(client):
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in session(check, mode=mode)}
    assert set(tools) == EXPECTED_TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 20, name
        assert "\n        " not in tool.description, name
        for prop, schema in tool.input_schema.get("properties", {}).items():
            assert "description" in schema, (name, prop)
            assert prop not in ("ctx", "approval")
        if name != "tracking_plot":
            assert tool.output_schema, name
    assert "approval" not in tools["jobs_submit"].input_schema["properties"]
    assert "approval_token" in tools["jobs_submit"].input_schema["properties"]


@pytest.mark.slow
def test_a_real_tiny_job_end_to_end(tiny_config, tmp_path):
    progress: list = []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async def flow(client):
        report = ok(await client.call_tool("pipeline_preflight", {"config_path": str(tiny_config)}))
        assert report["ok"] and {c["name"] for c in report["checks"]} >= {"config", "data", "model", "cost"}
        pre = await wait_done(client, report["smoke_job"]["id"])
        assert pre["job"]["stage"] == "COMPLETED", pre["error"]
        assert pre["outcome"]["mask_check"]["status"] == "pass" and pre["outcome"]["smoke"]["steps"] == 3

        rendered = ok(await client.call_tool("pipeline_render", {"config_path": str(tiny_config),
                                                                 "output_path": str(tmp_path / "train.py")}))
        adapter = tmp_path / "adapter"
        job = ok(await client.call_tool("jobs_submit", {"script_path": rendered["script_path"],
                                                        "args": ["--output-dir", str(adapter)],
                                                        "labels": {"stage": "train", "test": "e2e"}}))
        assert job["status"] == "submitted" and job["decision"]["status"] == "not_needed"
        view = await wait_done(client, job["job"]["id"], progress=on_progress)
        assert view["job"]["stage"] == "COMPLETED" and view["progress"]["step"] == 8
        assert view["outcome"]["steps"] == 8

        logs = ok(await client.call_tool("jobs_logs", {"job_id": job["job"]["id"], "tail": 5}))
        assert len(logs["lines"]) == 5 and logs["total_lines"] > 5 and "since=0" in logs["note"]
        page = ok(await client.call_tool("jobs_logs", {"job_id": job["job"]["id"], "since": logs["next_since"] - 2}))
        assert page["lines"] == logs["lines"][-2:]
        listed = ok(await client.call_tool("jobs_list", {"labels": {"test": "e2e"}}))
        assert [j["id"] for j in listed["jobs"]] == [job["job"]["id"]]

        run = rendered["run_name"]
        summary = ok(await client.call_tool("tracking_summary", {"project": "server-tests", "run": run}))
        loss = next(m for m in summary["metrics"] if m["name"] == "loss")
        assert loss["points"] >= 4 and loss["last"] < loss["first"]
        image = await client.call_tool("tracking_plot", {"project": "server-tests", "runs": [run],
                                                         "metrics": ["loss", "mean_token_accuracy"]})
        assert not image.is_error and image.content[0].type == "image" and image.content[0].mime_type == "image/png"
        import base64
        assert base64.b64decode(image.content[0].data)[:4] == PNG_MAGIC

        pushed = ok(await client.call_tool("registry_push", {"adapter_dir": str(adapter), "name": "server-e2e"}))
        assert pushed["version"] == 1 and "README.md" in pushed["files"]
        assert "| loss |" in Path(pushed["path"], "README.md").read_text()
        versions = ok(await client.call_tool("registry_list", {"name": "server-e2e"}))["result"]
        assert [v["version"] for v in versions] == [1]

        started = ok(await client.call_tool("pipeline_run", {"config_path": str(tiny_config)}))
        done = await wait_done(client, started["job"]["id"])
        assert done["job"]["stage"] == "COMPLETED", done["error"]
        assert done["outcome"]["registry_name"] == "server-tiny" and done["outcome"]["registry_version"] >= 1

    session(flow)
    steps = [p[0] for p in progress]
    assert steps and steps == sorted(steps) and progress[-1][1] == 8 and "loss" in progress[-1][2]


def test_tracking_write_tools_and_compare(tmp_path):
    async def flow(client):
        for run, losses in (("a", [3.0, 2.0, 1.0]), ("b", [3.0, 2.5, 2.4])):
            ok(await client.call_tool("tracking_start", {"project": "notes", "run": run, "config": {"k": 1}}))
            for step, value in enumerate(losses):
                ok(await client.call_tool("tracking_log", {"project": "notes", "run": run,
                                                           "metrics": {"loss": value}, "step": step}))
            ok(await client.call_tool("tracking_finish", {"project": "notes", "run": run}))
        assert "notes" in ok(await client.call_tool("tracking_projects", {}))["names"]
        assert ok(await client.call_tool("tracking_runs", {"project": "notes"}))["names"] == ["a", "b"]
        rows = ok(await client.call_tool("tracking_compare", {"project": "notes", "runs": ["b", "a"],
                                                              "metric": "loss"}))["result"]
        assert [r["run"] for r in rows] == ["a", "b"] and rows[0]["best"] == 1.0

    session(flow)


def test_skills_and_data_tools(tmp_path, monkeypatch):
    skills = tmp_path / "skills"
    (skills / "demo-skill").mkdir(parents=True)
    (skills / "demo-skill" / "SKILL.md").write_text(
        "---\nname: demo-skill\ndescription: A skill for tests.\nmetadata:\n  version: \"1.2.0\"\n  updated: \"2026-01-01\"\n"
        "---\n\n# Demo\n\nBody.\n")
    monkeypatch.setenv("TUNEPACK_SKILLS_DIR", str(skills))

    async def flow(client):
        listed = ok(await client.call_tool("skills_list", {}))["result"]
        assert [(s["name"], s["version"]) for s in listed] == [("demo-skill", "1.2.0")]
        added = ok(await client.call_tool("skills_add_pitfall", {
            "skill": "demo-skill", "symptom": "x breaks y on every run", "cause": "z happens first",
            "fix": "do w before x", "evidence": "job local-1"}))
        assert added["added"] and added["id"] == "P-001" and added["version"] == "1.2.1"
        assert added["pitfalls_path"] == str(skills / "demo-skill" / "references" / "pitfalls.md")
        body = ok(await client.call_tool("skills_read", {"name": "demo-skill"}))["result"]
        assert "## Pitfalls" in body and "[P-001](references/pitfalls.md) x breaks y on every run" in body
        entry = ok(await client.call_tool("skills_read", {"name": "demo-skill", "file": "references/pitfalls.md"}))
        assert "- **Fix:** do w before x" in entry["result"]
        report = ok(await client.call_tool("data_inspect", {"path": str(REPO / "examples/data/agent_traces.jsonl")}))
        assert report["num_rows"] == 48 and report["format"] == "messages"
        assert report["conversations"]["tool_calls"]["read_file"] == 21 and report["notes"] == []

    session(flow)


@pytest.mark.slow
def test_mask_preview_tool(tiny_config):
    async def flow(client):
        preview = ok(await client.call_tool("data_mask_preview", {"config_path": str(tiny_config), "row": 2}))
        assert preview["problems"] == [] and preview["fits_max_length"]
        assert preview["preview"].count("⟦") == 2 and "All 3 tests in pkg2 pass." in preview["preview"]
        bad = await client.call_tool("data_mask_preview", {"config_path": str(tiny_config), "row": 999})
        assert bad.is_error and "Row 999 does not exist" in text(bad)

    session(flow)


def test_validate_hardware_and_cancel(tiny_config, tmp_path):
    sleeper = tmp_path / "sleep.py"
    sleeper.write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")

    async def flow(client):
        valid = ok(await client.call_tool("pipeline_validate", {"config_path": str(tiny_config)}))
        assert valid["registry_name"] == "server-tiny" and len(valid["config_hash"]) == 12
        hf = ok(await client.call_tool("jobs_hardware", {}))["result"]
        assert {"t4-small", "a100-large"} <= {h["name"] for h in hf} and all(h["price_per_hour_usd"] > 0 for h in hf)
        local = ok(await client.call_tool("jobs_hardware", {"backend": "local"}))["result"]
        assert [h["name"] for h in local] == ["local"] and local[0]["price_per_hour_usd"] == 0
        job = ok(await client.call_tool("jobs_submit", {"script_path": str(sleeper)}))["job"]
        for _ in range(100):
            view = ok(await client.call_tool("jobs_status", {"job_id": job["id"]}))
            if view["job"]["stage"] == "RUNNING":
                break
            await anyio.sleep(0.1)
        canceled = ok(await client.call_tool("jobs_cancel", {"job_id": job["id"]}))
        assert canceled["job"]["stage"] == "CANCELED" and canceled["next_step"] == "canceled"

    session(flow)


ERROR_CALLS = [
    ("pipeline_validate", {"config_path": "nope.yaml"}, "does not exist"),
    ("pipeline_render", {"config_path": "nope.yaml"}, "does not exist"),
    ("pipeline_preflight", {"config_path": "nope.yaml"}, "does not exist"),
    ("pipeline_run", {"config_path": "nope.yaml"}, "does not exist"),
    ("jobs_submit", {}, "exactly one of script_path or config_path"),
    ("jobs_submit", {"script_path": "/no/such.py"}, "does not exist"),
    ("jobs_submit", {"script_path": "/no/such.py", "backend": "moon"}, "Unknown job backend"),
    ("jobs_status", {"job_id": "nope"}, "no local job 'nope'"),
    ("jobs_logs", {"job_id": "nope"}, "no local job 'nope'"),
    ("jobs_cancel", {"job_id": "nope"}, "no local job 'nope'"),
    ("jobs_wait", {"job_id": "nope", "timeout_s": 1}, "no local job 'nope'"),
    ("jobs_wait", {"job_id": "x", "timeout_s": 900}, "less than or equal to 600"),
    ("jobs_cost", {"flavor": "h100", "timeout_s": 60}, "Unknown flavor 'h100'"),
    ("jobs_cost", {"flavor": "a10g-small"}, "needs a timeout"),
    ("tracking_summary", {"project": "nope", "run": "x"}, "no project 'nope'"),
    ("tracking_log", {"project": "p", "run": "never-started", "metrics": {"x": 1}}, "not open"),
    ("tracking_finish", {"project": "p", "run": "never-started"}, "not open"),
    ("tracking_plot", {"project": "p", "runs": ["a"], "metrics": []}, "at least one run and one metric"),
    ("registry_push", {"adapter_dir": "/no/such", "name": "x"}, "is not a saved adapter"),
    ("registry_list", {"name": "no-such-adapter"}, "no adapter named"),
    ("skills_read", {"name": "no-such-skill"}, "no skill 'no-such-skill'"),
    ("skills_read", {"name": "tunepack-pipeline", "file": "../../pyproject.toml"}, "is not a file of skill"),
    ("skills_add_pitfall", {"skill": "tunepack-pipeline", "symptom": "short", "cause": "a long enough cause",
                            "fix": "a long enough fix"}, "symptom is 5 characters"),
    ("data_inspect", {"path": "/no/such.jsonl"}, "does not exist"),
]


def test_every_error_is_an_error_result_with_a_fix():
    async def flow(client):
        out = []
        for name, args, needle in ERROR_CALLS:
            out.append((name, needle, await client.call_tool(name, args)))
        return out

    for name, needle, result in session(flow):
        body = text(result)
        if name == "pipeline_preflight":  # a failed report: an error, the report kept as structured content
            assert result.is_error and result.structured_content["ok"] is False
            assert result.structured_content["checks"][0]["fix"] and body.startswith("Preflight did not pass: config:")
        assert result.is_error, name
        assert needle in body, (name, body)
        assert "Traceback" not in body
        assert "Fix:" in body, (name, body)  # argument errors too (server/boundary.py)


PAID = {"script_path": str(REPO / "bench" / "spine.py"), "backend": "hf", "flavor": "a10g-small",
        "timeout_s": 1800, "project": "approvals"}


def answering(action: str, asked: list):
    """An elicitation callback that records each question and answers accept (approve) or decline."""
    async def callback(context, request):
        asked.append(request.message)
        return t.ElicitResult(action=action, content={"approve": True} if action == "accept" else None)
    return callback


def test_elicitation_accept_and_decline(hub):
    asked: list[str] = []

    def answer(action):
        return answering(action, asked)

    accepted = session(lambda c: c.call_tool("jobs_submit", PAID), elicit=answer("accept"))
    declined = session(lambda c: c.call_tool("jobs_submit", PAID), elicit=answer("decline"))
    assert len(asked) == 2 and "$0.50" in asked[0] and "a10g-small" in asked[0]
    submitted = ok(accepted)
    assert submitted["status"] == "submitted" and submitted["decision"]["via"] == "elicitation"
    assert len(hub.requests("POST", "/api/jobs/alice")) == 1  # only the approved call reached HF Jobs
    assert declined.is_error and "The human declined" in text(declined)
    budget = json.loads(run_cli("budget", "show", "approvals").stdout)
    assert budget["charged_usd"] == 0.5 and budget["open_charges"] == 1  # worst case while it runs
    hub.set_stage(submitted["job"]["id"], "COMPLETED")
    view = ok(session(lambda c: c.call_tool("jobs_status", {"job_id": submitted["job"]["id"], "backend": "hf"})))
    assert view["job"]["stage"] == "COMPLETED"
    budget = json.loads(run_cli("budget", "show", "approvals").stdout)
    assert budget["open_charges"] == 0 and budget["charged_usd"] < 0.01  # reconciled to the real runtime


def test_free_jobs_never_ask():
    asked = []

    async def callback(context, request):
        asked.append(request)
        return t.ElicitResult(action="decline")

    result = session(lambda c: c.call_tool("jobs_cost", {"flavor": "cpu-basic", "timeout_s": 60}), elicit=callback)
    assert ok(result)["needs_approval"] is False and asked == []


def test_two_step_token_without_elicitation(hub):
    async def flow(client):
        first = ok(await client.call_tool("jobs_submit", PAID))
        assert first["status"] == "approval_required" and first["job"] is None
        token = first["decision"]["approval_token"]
        assert token in first["next_step"] and first["cost"]["worst_case_usd"] == 0.5
        wrong = await client.call_tool("jobs_submit", {**PAID, "approval_token": "tp-approve-forged"})
        changed = await client.call_tool("jobs_submit", {**PAID, "timeout_s": 3600, "approval_token": token})
        good = await client.call_tool("jobs_submit", {**PAID, "approval_token": token})
        reused = await client.call_tool("jobs_submit", {**PAID, "approval_token": token})
        second = ok(await client.call_tool("jobs_submit", PAID))["decision"]["approval_token"]
        return wrong, changed, good, reused, second

    wrong, changed, good, reused, second = session(flow)
    assert wrong.is_error and "not one this server issued" in text(wrong)
    assert changed.is_error and "different arguments" in text(changed)
    assert ok(good)["status"] == "submitted" and ok(good)["decision"]["via"] == "token"
    assert len(hub.requests("POST", "/api/jobs/alice")) == 1
    assert reused.is_error and "already used" in text(reused)

    db = sqlite3.connect(Path(os.environ["TUNEPACK_HOME"]) / "approval" / "quotes.db")
    with db:
        db.execute("UPDATE quotes SET expires = ? WHERE token = ?", (time.time() - 1, second))
    expired = session(lambda c: c.call_tool("jobs_submit", {**PAID, "approval_token": second}))
    assert expired.is_error and "expired" in text(expired)


def test_budget_refusal_survives_a_restart(hub):
    assert run_cli("budget", "set", "tight", "0.25", "--yes").returncode == 0
    args = {**PAID, "project": "tight"}

    async def flow(client):
        token = ok(await client.call_tool("jobs_submit", args))["decision"]["approval_token"]
        return await client.call_tool("jobs_submit", {**args, "approval_token": token})

    for _ in range(2):  # a second, fresh server process keeps the limit
        refused = session(flow)
        assert refused.is_error and "Budget refused" in text(refused) and "$0.25" in text(refused)
    status = session(lambda c: c.call_tool("budget_status", {"project": "tight"}))
    assert ok(status)["limit_usd"] == 0.25 and ok(status)["charged_usd"] == 0
    assert hub.requests("POST", "/api/jobs/alice") == []  # nothing was submitted


def _server_pids(marker: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "mcp_server.cli serve" in cmd and marker in cmd:
                pids.append(int(proc.name))
    return pids


def test_job_store_recovers_after_the_server_is_killed(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import sys, time\ntime.sleep(3)\nprint('finished', flush=True)\nsys.exit(int(sys.argv[1]))\n")
    marker = str(40000 + os.getpid() % 20000)

    async def submit_then_die():
        ids = []
        try:
            async with Client(params("--port", marker), mode="legacy") as client:
                for code in ("0", "5"):
                    ids.append(ok(await client.call_tool("jobs_submit", {"script_path": str(script), "args": [code]}))
                               ["job"]["id"])
                for pid in _server_pids(marker):
                    os.kill(pid, signal.SIGKILL)
                await anyio.sleep(0.5)
                await client.call_tool("jobs_status", {"job_id": ids[0]})
        except Exception:
            pass  # the server is gone; that is the point
        return ids

    ids = anyio.run(submit_then_die)
    assert len(ids) == 2 and _server_pids(marker) == []
    time.sleep(6)

    async def after(client):
        return [ok(await client.call_tool("jobs_status", {"job_id": i})) for i in ids]

    good, bad = session(after)
    assert good["job"]["stage"] == "COMPLETED" and good["job"]["exit_code"] == 0
    assert bad["job"]["stage"] == "ERROR" and bad["job"]["exit_code"] == 5 and "exit code 5" in bad["error"]


INSPECTOR = REPO / "node_modules" / ".bin" / "mcp-inspector"


@pytest.mark.skipif(not INSPECTOR.exists(), reason="MCP Inspector CLI not installed here: run `npm ci` (CI does)")
@pytest.mark.parametrize("strict", [False, True])
def test_mcp_inspector_lists_the_tools(strict):
    cmd = [str(INSPECTOR), "--cli", *(["--strict"] if strict else []), sys.executable, "-m", "mcp_server.cli", "serve",
           "--toolsets", "all", "--method", "tools/list"]  # the Inspector passes the server a filtered environment
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=REPO, env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-2000:]
    assert {tool["name"] for tool in json.loads(done.stdout)["tools"]} == EXPECTED_TOOLS


def test_backend_and_flavor_come_from_the_config_when_the_call_omits_them(tmp_path, short_data):
    path = tmp_path / "paid.yaml"
    config = {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(short_data)},
              "job": {"backend": "hf", "flavor": "t4-small", "timeout_s": 3600}, "tracking": {"project": "from-config"}}
    path.write_text(json.dumps({**config, "model": {"name": "tiny:qwen3"}}))
    tiny = session(lambda c: c.call_tool("pipeline_run", {"config_path": str(path)}))
    assert tiny.is_error and "cannot run on HF Jobs" in text(tiny)  # refused before any quote
    path.write_text(json.dumps(config))
    quote = ok(session(lambda c: c.call_tool("pipeline_run", {"config_path": str(path)})))
    assert quote["status"] == "approval_required"
    assert (quote["cost"]["backend"], quote["cost"]["flavor"], quote["cost"]["worst_case_usd"]) == ("hf", "t4-small", 0.4)
    local = ok(session(lambda c: c.call_tool("pipeline_preflight", {"config_path": str(path), "backend": "local",
                                                                   "smoke": False})))
    assert local["cost"]["backend"] == "local"


def test_streamable_http_on_loopback():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--http", "--port", str(port)],
                            cwd=REPO, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)

        async def flow():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                tools = (await client.list_tools()).tools
                cost = await client.call_tool("jobs_cost", {"backend": "local"})
                return tools, cost

        tools, cost = anyio.run(flow)
        assert {t.name for t in tools} == EXPECTED_TOOLS and ok(cost)["worst_case_usd"] == 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_call_that_did_not_do_what_was_asked_is_an_error_with_its_outcome(tmp_path):
    """A job that ended in ERROR answers jobs_wait with isError, the outcome in the text and the view kept as
    structured content; the same for a sweep selection without a best run and a plan that refuses every run."""
    from mcp_server.server.common import _result
    from mcp_server.sweeps.plan import PlannedRun, SweepPlan
    from mcp_server.sweeps.select import Selection

    failing = tmp_path / "fail.py"
    failing.write_text("import sys\nprint('starting', flush=True)\nsys.exit(2)\n")

    async def flow(client):
        job = ok(await client.call_tool("jobs_submit", {"script_path": str(failing)}))["job"]
        return await client.call_tool("jobs_wait", {"job_id": job["id"], "timeout_s": 30})

    waited = session(flow)
    assert waited.is_error and waited.structured_content["job"]["stage"] == "ERROR"
    assert text(waited).startswith(f"Job {waited.structured_content['job']['id']} ended ERROR:") and "Fix:" in text(waited)
    first_line = text(waited).split("\n\n", 1)[0]
    assert first_line.count(" Fix: ") == 1, first_line  # trial (a): the error's own fix, not a second generic one

    selection = Selection(sweep_id="s1", sweep_status="finished", metric={"name": "eval_loss"}, ranking=[], best=None,
                          recorded=False, ledger_note="", table="", next_step="read sweep_status")
    answer = _result("sweep_select", selection)
    assert answer.is_error and "No run of sweep s1 could be ranked on eval_loss" in answer.content[0].text
    run = PlannedRun(id="r01", changes={"training.learning_rate": 0.1}, config_hash="h", flavor="local", processes=1,
                     timeout_s=None, expected_s=1.0, expected_usd=None, worst_case_usd=0.0,
                     needs_approval=False, launch="python", refused="do-not-repeat: diverged (ledger exp-1)")
    plan = SweepPlan(name="s", base="b", model="m", method="sft", backend="local", flavor=None, project="p",
                     ledger="p", metric={}, max_concurrent=1, canary=None, early_stop={}, retries=0, runs=[run],
                     total_runs=0, total_worst_case_usd=0.0, total_expected_usd=None, expected_wall_s=0.0,
                     needs_approval=False, budget_cap_usd=None, daily_budget_left_usd=None, within_budget=True, notes=[])
    answer = _result("sweep_plan", plan)
    assert answer.is_error and "refuses all 1 runs: r01" in answer.content[0].text
    assert answer.structured_content["runs"][0]["refused"].startswith("do-not-repeat")
    assert _result("sweep_plan", plan.model_copy(update={"total_runs": 1})) is not None
