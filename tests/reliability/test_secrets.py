"""A Hugging Face token never leaks. With a fake token (``hf_`` + 34 random characters) in HF_TOKEN and in the
saved login (HF_HOME/token), the whole pipeline runs through the real MCP server: validate, render, preflight, a
local training job, tracking, a push to the loopback Hub, an HF sweep (the Jobs stand-in) whose canary finishes,
an eval of that run on HF Jobs, a pitfall, a traces conversion, the ledger and a Hub search. Then every tool
result, job log, rendered script, job spec (the store and the run folders), manifest, Trackio database, model
card, sweep state, skill file, dataset, and every request body the stand-in received (the files pushed, the
scripts jobs were given) is scanned: the token appears 0 times — only the Jobs API's ``secrets`` field carries it,
as it must. A token an agent pastes into a pitfall, a ledger entry or a session is redacted."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import string
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from support.common import REPO, short_conversation, write_jsonl
from support.standin.hub_service import HubStandIn
from support.sweeps import hub_base, unique
from test_server import params
from test_sweeps_controller import finished

from mcp_server.jobs import get_backend
from mcp_server.jobs.transport import script_from_command
from mcp_server.sweeps import cancel_sweep, sweep_dir

pytestmark = pytest.mark.slow
TOKEN = "hf_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(34))
FINAL = ("COMPLETED", "ERROR", "CANCELED")
EVAL_RESULTS = {"tasks": [{"task": "humaneval", "metric": "pass@1", "n": 2, "samples": 1,
                           "scores": {"base": 0.0, "adapter": 0.5}, "status": {"base": "scored", "adapter": "scored"},
                           "contamination": {"contaminated": 0, "n_problems": 2, "share": 0.0}}],
                "sandbox": "unsafe-host", "isolated": False, "temperature": 0.0, "limit": 2, "ids": []}


class Recorder:
    """Calls tools and keeps every result (text and structured content) for the scan."""

    def __init__(self, client):
        self.client, self.results = client, []

    async def __call__(self, tool: str, args: dict, error: bool = False) -> dict:
        result = await self.client.call_tool(tool, args)
        self.results.append((tool, json.dumps([c.model_dump(mode="json") for c in result.content])
                             + json.dumps(result.structured_content)))
        assert result.is_error == error, (tool, result.content[0].text if result.content else "")
        return result.structured_content or {}

    async def wait(self, job_id: str, backend: str = "local") -> dict:
        for _ in range(20):
            view = await self("jobs_wait", {"job_id": job_id, "backend": backend, "timeout_s": 20})
            if view["job"]["stage"] in FINAL:
                return view
        raise AssertionError(f"job {job_id} did not finish")


def _script_of(body: dict) -> str:
    """The script an HF job was given (its command carries it packed)."""
    return script_from_command(body.get("command") or [])


def _leaks_in_files(roots: list[Path], since: float) -> dict[str, int]:
    """Token occurrences per file written since ``since`` under ``roots`` (bytes, so SQLite files count too)."""
    needle, hits = TOKEN.encode(), {}
    for root in roots:
        for path in root.rglob("*") if root.is_dir() else []:
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_mtime >= since:
                    count = path.read_bytes().count(needle)
                    if count:
                        hits[str(path)] = count
            except OSError:
                continue
    return hits


def _leaks_at_the_hub(hub) -> tuple[dict[str, int], int]:
    """Token occurrences in what the stand-in received — request bodies (less the Jobs API's ``secrets`` field),
    the scripts jobs were given, every file pushed to a repo — and how many jobs got the token as their secret."""
    hits, as_secret = {}, 0
    for i, req in enumerate(hub.state.requests):
        body = req.body
        if isinstance(body, dict) and req.method == "POST" and re.fullmatch(r"/api/jobs/[^/]+", req.path):
            as_secret += (body.get("secrets") or {}).get("HF_TOKEN") == TOKEN  # where the token belongs
            script = _script_of(body)
            assert script, f"no script found in the command of job request #{i}"
            body = {**body, "secrets": None, "script": script}
        text = body.decode(errors="replace") if isinstance(body, bytes) else json.dumps(body)
        if TOKEN in text:
            hits[f"{req.method} {req.path} #{i}"] = text.count(TOKEN)
    for repo_id, repo in hub.state.repos.items():
        for path, data in repo["files"].items():
            if TOKEN.encode() in data:
                hits[f"{repo_id}/{path}"] = data.count(TOKEN.encode())
    return hits, as_secret


@pytest.fixture
def secret_world(tmp_path, monkeypatch):
    """The fake token in the environment and the saved login, a stand-in that accepts only it, and a copy of
    the skills to write pitfalls into."""
    hf_home = tmp_path / "hf-home"
    hf_home.mkdir()
    (hf_home / "token").write_text(TOKEN)
    skills = tmp_path / "skills"
    shutil.copytree(REPO / "skills" / "tunepack-sft", skills / "tunepack-sft")
    with HubStandIn(run_jobs=False) as hub:
        hub.state.token = TOKEN
        for name, value in {"HF_TOKEN": TOKEN, "HF_HOME": str(hf_home), "HF_ENDPOINT": hub.endpoint,
                            "TUNEPACK_SKILLS_DIR": str(skills), "TUNEPACK_LOCAL_MAX_JOBS": "3"}.items():
            monkeypatch.setenv(name, value)
        yield hub, skills


def _session_file(folder: Path) -> Path:
    """An OpenAI-chat session in which the user pastes the token and a tool prints it."""
    rows = [{"messages": [
        {"role": "user", "content": f"push it; my token is {TOKEN}"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "bash", "arguments": json.dumps({"command": f"HF_TOKEN={TOKEN} hf upload alice/x ."})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"uploaded with Authorization: Bearer {TOKEN}"},
        {"role": "assistant", "content": "Uploaded."}]}]
    return write_jsonl(folder / "session.jsonl", rows)


def test_the_token_never_leaks(secret_world, tmp_path, short_data):
    hub, skills = secret_world
    started_at = time.time() - 1
    project = unique("secrets")
    config = tmp_path / "tiny.yaml"
    config.write_text(json.dumps({
        "model": {"name": "tiny:qwen3"}, "data": {"path": str(short_data)},
        "training": {"max_length": 128, "max_steps": 3, "logging_steps": 1, "gradient_checkpointing": False},
        "tracking": {"project": project}, "output": {"name": project}}))
    sweep_data = write_jsonl(tmp_path / "sweep.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
    sweep_spec = {"name": "secret", "base": hub_base(sweep_data, f"{project}-hf"), "backend": "hf",
                  "flavor": "t4-small", "timeout_s": 3600, "budget_usd": 5, "max_concurrent": 1,
                  "canary": {"steps": 1}, "metric": {"name": "loss"},
                  "grid": {"training.learning_rate": [1e-4, 2e-4]}}
    hub.state.repos[f"alice/{project}-hf"] = {"type": "model", "private": True, "files": {}, "commits": ["c0"]}
    out: dict = {}

    async def flow(client):
        call = Recorder(client)
        out["call"] = call
        assert (await call("pipeline_validate", {"config_path": str(config)}))["ok"]
        await call("pipeline_render", {"config_path": str(config), "output_path": str(tmp_path / "train.py")})
        pre = await call("pipeline_preflight", {"config_path": str(config)})
        await call("jobs_cancel", {"job_id": pre["smoke_job"]["id"]})  # its scripts and spec are written: enough
        run = await call("pipeline_run", {"config_path": str(config)})
        out["jobs"] = [run["job"]["id"]]

        # while the local run trains: an HF sweep, its canary finished on the Jobs stand-in, an eval of it there
        await call("sweep_plan", {"spec": sweep_spec})
        quote = await call("sweep_submit", {"spec": sweep_spec})
        sweep = await call("sweep_submit", {"spec": sweep_spec, "approval_token": quote["decision"]["approval_token"]})
        out["sweeps"] = [sweep["sweep_id"]]
        canary = await _canary_job(hub, sweep["sweep_id"])
        configs = json.loads((sweep_dir(sweep["sweep_id"]) / "plan.json").read_text())["configs"]
        hub.state.logs[canary] = finished(configs["r01"], f"{sweep['sweep_id']}-r01", [2.0, 1.5])
        hub.set_stage(canary, "COMPLETED")
        settled = await call("jobs_status", {"job_id": canary, "backend": "hf"})
        remote_name = settled["outcome"]["registered"]["registry_name"]  # recorded with its Hub repo
        await call("sweep_cancel", {"sweep_id": sweep["sweep_id"]})
        ev = {"tasks": ["humaneval"], "limit": 2, "sandbox": "unsafe-host"}
        eval_args = {"name": remote_name, "eval": ev, "backend": "hf", "flavor": "a10g-small", "timeout_s": 3600}
        quote = await call("eval_start", eval_args)
        started = await call("eval_start", {**eval_args, "approval_token": quote["decision"]["approval_token"]})
        eval_job = started["job"]["id"]
        hub.state.logs[eval_job] = ["[tunepack] evaluating", "TUNEPACK_EVAL " + json.dumps(EVAL_RESULTS)]
        hub.set_stage(eval_job, "COMPLETED")
        out["eval"] = await call("eval_results", {"job_id": eval_job})

        # an agent pastes the token where it should not
        out["pitfall"] = await call("skills_add_pitfall", {
            "skill": "tunepack-sft", "symptom": "the Hub push failed with a 401 right after login",
            "cause": f"the shell exported HF_TOKEN={TOKEN} from an old login", "fix": "log in again with hf auth login",
            "evidence": f"Authorization: Bearer {TOKEN}"})
        out["traces"] = await call("traces_convert", {"paths": [str(_session_file(tmp_path / "sessions"))],
                                                      "output": str(tmp_path / "rows.jsonl")})
        proposed = await call("ledger_propose", {"project": project, "variable": "training.learning_rate",
                                                 "value": 0.001, "hypothesis": f"a higher rate helps; token {TOKEN}"})
        number = proposed["experiment"]["id"]
        await call("ledger_claim", {"project": project, "worker": "w1", "experiment_id": number})
        out["ledger"] = await call("ledger_record", {"project": project, "experiment_id": number, "status": "crash",
                                                     "note": f"crashed; HF_TOKEN={TOKEN} was in the log"})
        await call("research_models", {"query": "qwen3"})

        done = await call.wait(run["job"]["id"])
        assert done["job"]["stage"] == "COMPLETED", done.get("error")
        await call("jobs_logs", {"job_id": run["job"]["id"], "tail": 200})
        await call("tracking_summary", {"project": project, "run": run["run_name"]})
        out["published"] = await call("registry_publish", {"name": project, "repo_id": f"alice/{project}"})

    try:
        anyio.run(_in_session, flow, tmp_path / "server.log")
    finally:  # a failure midway leaves nothing running
        for sweep_id in out.get("sweeps", []):
            with contextlib.suppress(Exception):
                cancel_sweep(sweep_id)
        for job_id in out.get("jobs", []):
            get_backend("local").cancel(job_id)
    call = out["call"]
    assert out["published"]["status"] == "published"
    assert out["eval"]["tasks"][0]["scores"]["adapter"] == 0.5

    leaks = {tool: text.count(TOKEN) for tool, text in call.results if TOKEN in text}
    assert leaks == {}, f"the token in tool results: {leaks}"
    # every file written meanwhile: the home (jobs, runs, registry, sweeps, ledger, budget), Trackio, the skills,
    # and this test's folder (rendered script, dataset, server log) — where the two inputs that hold the token on
    # purpose show the scan finds it
    roots = [Path(os.environ["TUNEPACK_HOME"]), Path(os.environ["TRACKIO_DIR"]), tmp_path]
    found = _leaks_in_files(roots, started_at)
    inputs = {str(tmp_path / "hf-home" / "token"): 1, str(tmp_path / "sessions" / "session.jsonl"): 3}
    assert found == inputs, f"the token in files: { {k: v for k, v in found.items() if k not in inputs} }"
    assert (tmp_path / "server.log").is_file() and skills.is_relative_to(tmp_path)
    at_hub, as_secret = _leaks_at_the_hub(hub)
    assert at_hub == {} and as_secret == 2  # the canary and the eval job got it as their secret, nowhere else

    # what agents pasted was redacted, and says so
    assert out["pitfall"]["redacted"] == 2
    assert "[REDACTED_HF_TOKEN]" in Path(out["pitfall"]["pitfalls_path"]).read_text()
    assert out["traces"]["redactions"].get("hf_token", 0) >= 2
    assert "[REDACTED_HF_TOKEN]" in (tmp_path / "rows.jsonl").read_text()
    assert "[REDACTED_HF_TOKEN]" in out["ledger"]["experiment"]["note"]
    assert "[REDACTED_HF_TOKEN]" in out["ledger"]["experiment"]["hypothesis"]


async def _in_session(flow, log: Path):
    with log.open("w") as errlog:  # the server's own log is scanned too
        async with Client(stdio_client(params(), errlog=errlog), mode="legacy") as client:
            return await flow(client)


async def _canary_job(hub, sweep_id: str) -> str:
    for _ in range(300):
        for job_id, job in list(hub.state.jobs.items()):
            if (job.get("labels") or {}).get("sweep") == sweep_id:
                return job_id
        await anyio.sleep(0.1)
    raise AssertionError(f"the controller of {sweep_id} submitted nothing in 30 s")

