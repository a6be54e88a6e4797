"""Approval as a table: every MCP tool is classified (spends, publishes, deletes or none); every tool that spends,
publishes or deletes is refused without a human's yes through both faces, and the daily budget holds.

- MCP face: a real ``mcp.Client`` over stdio that cannot elicit, so the server answers with a quote and a
  single-use approval token. Per gated tool: no approval → a quote and nothing reaches the Hub; the token with any
  one argument changed (or the file it names edited in place) → refused; a forged token, or another tool's →
  refused; the token itself → done once; the same token again → refused.
- CLI face: ``tunepack …`` as a subprocess with no TTY. A person typing the command is the approval, so the check
  is that the daily budget still refuses over-limit work (and that public publishing and paid sweeps need their
  explicit flag).
- The daily budget across a sweep (each run is charged; a second sweep or job over the limit is refused) and
  across a server restart (the charges are persisted).

HF Jobs and the Hub are the loopback stand-in (tests/support/standin/hub_service.py); the tunepack home is this
module's own, so budgets and tokens start empty.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from support.common import REPO, short_conversation, write_jsonl
from mcp import Client, StdioServerParameters

from mcp_server.harness.catalog import READ_ONLY, SPENDING
from mcp_server.server import all_tools

SPENDS, PUBLISHES, DELETES, NONE = "spends", "publishes", "deletes", "none"

# Every tool the server has, by what it can do that a human must agree to. A new tool fails
# test_every_tool_is_classified until it is added here (and, when gated, to CASES and CLI_TWINS below).
KIND: dict[str, str] = {
    # start jobs, which cost money on a non-CPU flavor
    "pipeline_run": SPENDS, "jobs_submit": SPENDS, "eval_start": SPENDS, "sweep_submit": SPENDS,
    "loop_schedule": SPENDS,  # a scheduled HF job: its approval bounds every cycle's spend together
    # make something public
    "registry_publish": PUBLISHES, "traces_push": PUBLISHES,
    # nothing deletes: the registry never overwrites a version, jobs and sweeps are canceled (their records, logs
    # and ledger rows stay), and no tool removes a Hub repo
    # local, free or read-only
    "pipeline_validate": NONE, "pipeline_render": NONE,
    "pipeline_preflight": NONE,  # its smoke job always runs locally; the flavor only prices the quote
    "jobs_status": NONE, "jobs_logs": NONE, "jobs_list": NONE, "jobs_wait": NONE, "jobs_hardware": NONE,
    "jobs_cost": NONE, "budget_status": NONE,
    "jobs_cancel": NONE, "sweep_cancel": NONE,  # stop spending; nothing is deleted
    "tracking_start": NONE, "tracking_log": NONE, "tracking_finish": NONE, "tracking_projects": NONE,
    "tracking_runs": NONE, "tracking_summary": NONE, "tracking_compare": NONE, "tracking_plot": NONE,
    "registry_push": NONE, "registry_list": NONE,  # a new local version each push
    "skills_list": NONE, "skills_read": NONE, "skills_add_pitfall": NONE,
    "data_inspect": NONE, "data_mask_preview": NONE,
    "viewer_splits": NONE, "viewer_rows": NONE, "viewer_search": NONE, "viewer_filter": NONE,
    "viewer_statistics": NONE, "viewer_size": NONE, "viewer_traces": NONE,
    "eval_results": NONE, "eval_ladder": NONE, "traces_convert": NONE,
    "ledger_propose": NONE, "ledger_claim": NONE, "ledger_record": NONE, "ledger_list": NONE, "ledger_report": NONE,
    "research_models": NONE, "research_datasets": NONE, "research_papers": NONE, "research_paper": NONE,
    "sweep_plan": NONE, "sweep_status": NONE, "sweep_select": NONE, "sweep_report": NONE,
    "results_readme": NONE,  # writes the named markdown file's marked section, nothing else
    "grpo_prompts": NONE,  # writes prompt rows; runs no code
    "dpo_pairs": NONE,  # writes preference rows from saved rollouts; runs no code
    "loop_cycle": NONE, "loop_status": NONE,  # a cycle is a local job on this machine
    "loop_sync": NONE,  # reads the loop's Hub state; downloads its promoted adapter into the local registry
}
DESTRUCTIVE_WORDS = ("delete", "remove", "purge", "drop", "destroy", "wipe")

# The CLI command a person types for the same action.
CLI_TWINS: dict[str, str] = {
    "pipeline_run": "tunepack run CONFIG --backend hf",
    "jobs_submit": "tunepack jobs submit --backend hf SCRIPT",
    "eval_start": "tunepack eval run NAME --backend hf",
    "registry_publish": "tunepack registry publish NAME --repo R --public",
    "sweep_submit": "tunepack sweep submit SPEC --yes",
    "traces_push": "tunepack traces push PATHS --repo R --public",
    "loop_schedule": "tunepack loop schedule SPEC --flavor F --timeout T --yes",
}
PROJECT, SWEEP_PROJECT, SWEEP_LIMIT = "gate-jobs", "gate-sweep", 1.0


def test_every_tool_is_classified():
    tools = {tool.__name__: tool for tool in all_tools()}
    assert set(KIND) == set(tools), (f"classify these tools in KIND: {sorted(set(tools) - set(KIND))}; "
                                     f"gone: {sorted(set(KIND) - set(tools))}")
    gated = {name for name, kind in KIND.items() if kind != NONE}
    assert gated == set(SPENDING), "every harness asks before exactly the tools that spend, publish or delete"
    assert not set(READ_ONLY) & gated
    assert gated == set(CLI_TWINS) == {case.tool for case in CASES}
    for name, tool in tools.items():
        takes_token = "approval_token" in inspect.signature(tool).parameters
        assert takes_token == (name in gated), f"{name}: a gated tool takes approval_token, another does not"
        if any(word in name for word in DESTRUCTIVE_WORDS):
            assert KIND[name] == DELETES, f"{name} sounds destructive: classify it as deletes and gate it"


# --- the world the gated calls act on ------------------------------------------------------------------


@dataclass
class World:
    root: Path
    hub: object
    files: dict[str, Path] = field(default_factory=dict)

    def posts(self) -> int:
        return len(self.hub.requests("POST"))


def _config(data: Path, project: str, name: str, **extra) -> str:
    body = {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(data)}, "training": {"max_steps": 20},
            "tracking": {"project": project}, "output": {"name": name},
            "job": {"backend": "hf", "flavor": "t4-small", "timeout_s": 3600}}
    body.update(extra)
    return json.dumps(body)


def _adapter(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"\0" * 64)
    return folder


def _sweep_spec(data: Path, name: str, grid: list[int], project: str = SWEEP_PROJECT) -> dict:
    base = {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(data)}, "training": {"max_steps": 20},
            "tracking": {"project": project}, "output": {"name": project}}
    return {"name": name, "base": base, "backend": "hf", "flavor": "t4-small", "timeout_s": 3600,
            "max_concurrent": 2, "canary": {"enabled": False}, "grid": {"lora.r": grid}}


def _loop_spec(root: Path, key: str, name: str, max_cycles: int) -> Path:
    """A loop spec reading sessions from a Hub dataset, with its training config and retention rows beside it."""
    folder = root / key
    folder.mkdir()
    write_jsonl(folder / "general.jsonl", [{"messages": short_conversation(i)} for i in range(2)])
    (folder / "train.yaml").write_text(json.dumps({"model": {"name": "Qwen/Qwen3-0.6B"},
                                                   "data": {"path": str(folder / "general.jsonl")},
                                                   "tracking": {"project": "gate-loop"}, "output": {"name": name}}))
    (folder / "loop.yaml").write_text(json.dumps({
        "name": name, "config": "train.yaml", "sources": ["hf://datasets/alice/gate-sessions"], "frozen_sessions": 2,
        "min_new_sessions": 3, "max_cycles": max_cycles, "retention": {"path": "general.jsonl", "margin": 0.05}}))
    return folder / "loop.yaml"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Its own tunepack home and Hub stand-in, configs, scripts, adapters and sweep specs."""
    from support.standin.hub_service import HubStandIn

    from mcp_server.approval import Budget
    from mcp_server.registry import LocalRegistry

    root = tmp_path_factory.mktemp("gates")
    with pytest.MonkeyPatch.context() as mp, HubStandIn(run_jobs=False) as hub:
        mp.setenv("TUNEPACK_HOME", str(root / "home"))
        mp.setenv("HF_ENDPOINT", hub.endpoint)
        mp.setenv("HF_TOKEN", hub.state.token)
        mp.delenv("TUNEPACK_DAILY_BUDGET_USD", raising=False)
        w = World(root, hub)
        data = write_jsonl(root / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
        f = w.files
        for key, text in {"cfg": _config(data, "gate-run", "gate-run"),
                          "cfg_other": _config(data, "gate-run", "gate-run", training={"max_steps": 12}),
                          "cfg_edit": _config(data, "gate-run", "gate-run", training={"max_steps": 16}),
                          "cfg_cli": _config(data, "gate-cli", "gate-cli"),
                          "script": "print('hello from a paid job')\n", "script_other": "print('something else')\n",
                          "script_edit": "print('edited after the quote')\n"}.items():
            f[key] = root / (f"{key}.yaml" if key.startswith("cfg") else f"{key}.py")
            f[key].write_text(text)
        registry = LocalRegistry()
        for name in ("gate-pub", "gate-pub", "gate-pub-b"):
            registry.push(_adapter(root / "adapters" / f"{name}-{len(registry.list())}"), name)
        manifest = {"config": {"model": {"name": "Qwen/Qwen3-0.6B"},
                               "data": {"hub_id": "alice/agent-data", "revision": "r1", "split": "train", "path": []}}}
        for name in ("gate-eval", "gate-eval", "gate-eval-b", "gate-eval-cli"):
            registry.record_remote(name, manifest=manifest, hub_repo=f"alice/{name}", hub_commit="c1",
                                   card=lambda v: "# eval\n")
        f["data"] = data
        fixtures = REPO / "tests" / "fixtures" / "traces" / "pi"
        for key, names in {"sessions": ["linear.v1.jsonl"], "sessions_other": ["tree.v3.jsonl"],
                           "sessions_cli": ["linear.v1.jsonl"]}.items():
            f[key] = root / key
            f[key].mkdir()
            for name in names:
                (f[key] / name).write_bytes((fixtures / name).read_bytes())
        f["new_session"] = fixtures / "compaction.v1.jsonl"
        for key, spec in {"sweep": _sweep_spec(data, "gate-file", [4, 8]),
                          "sweep_other": _sweep_spec(data, "gate-file-b", [4, 8]),
                          "sweep_edit": {**_sweep_spec(data, "gate-file", [4, 8]), "set": {"training.max_steps": 16}},
                          "sweep_cli": _sweep_spec(data, "gate-cli", [4, 8], project="gate-sweep-cli")}.items():
            f[key] = root / f"{key}.json"  # JSON is YAML
            f[key].write_text(json.dumps(spec))
        from support.remote import seed_folder

        seed_folder(hub, "alice/gate-sessions", f["sessions"], "dataset")  # the loops' sessions, on the Hub
        for key, (name, cycles) in {"loop": ("gate-loop", 2), "loop_other": ("gate-loop-b", 2),
                                    "loop_edit": ("gate-loop", 3), "loop_cli": ("gate-loop-cli", 2)}.items():
            f[key] = _loop_spec(root, key, name, cycles)
        Budget().set_limit(SWEEP_PROJECT, SWEEP_LIMIT)
        yield w
        _cancel_sweeps()


def _cancel_sweeps() -> None:
    from mcp_server.sweeps import cancel_sweep, list_sweeps

    for sweep_id in list_sweeps():
        try:
            cancel_sweep(sweep_id)
        except Exception:
            pass  # already finished


# --- the gated calls, as a table -----------------------------------------------------------------------


@dataclass
class Variant:
    """One argument changed after the quote (or the file an argument names edited in place)."""
    label: str
    change: dict = field(default_factory=dict)
    edit: tuple[str, str] | None = None  # (file key, key of the file whose text replaces it for this call)


@dataclass
class Gate:
    tool: str
    call: dict  # the call that spends or publishes (file keys in {braces} are replaced by paths)
    variants: list[Variant]
    effect: str = "posts"  # how to see that it acted: POST requests to the Hub stand-in, or sweeps started
    status: str = "submitted"
    grow: tuple[str, str] | None = None  # before the token's second use: (folder key, file key copied into it)
    reused: str = "already used"  # why the token's second use is refused


EVAL = {"tasks": ["humaneval"], "limit": 3, "sandbox": "unsafe-host"}
CASES = [
    Gate("pipeline_run", {"config_path": "{cfg}", "backend": "hf", "flavor": "t4-small", "timeout_s": 3600}, [
        Variant("config_path", {"config_path": "{cfg_other}"}),
        Variant("config edited in place", edit=("cfg", "cfg_edit")),
        Variant("flavor", {"flavor": "t4-medium"}),
        Variant("timeout_s", {"timeout_s": 7200}),
        Variant("force", {"force": True})]),
    Gate("jobs_submit", {"script_path": "{script}", "backend": "hf", "flavor": "a10g-small", "timeout_s": 1800,
                         "project": PROJECT}, [
        Variant("script_path", {"script_path": "{script_other}"}),
        Variant("script edited in place", edit=("script", "script_edit")),
        Variant("flavor", {"flavor": "a10g-large"}),
        Variant("timeout_s", {"timeout_s": 3600}),
        Variant("args", {"args": ["--steps", "9999"]}),
        Variant("labels", {"labels": {"stage": "other"}}),
        Variant("secrets", {"secrets": ["HF_TOKEN"]}),
        Variant("project", {"project": "another-project"})]),
    Gate("eval_start", {"name": "gate-eval", "version": 1, "eval": EVAL, "backend": "hf", "flavor": "a10g-small",
                        "timeout_s": 3600}, [
        Variant("name", {"name": "gate-eval-b"}),
        Variant("version", {"version": 2}),
        Variant("eval", {"eval": {**EVAL, "limit": 5}}),
        Variant("flavor", {"flavor": "a10g-large"}),
        Variant("timeout_s", {"timeout_s": 7200})]),
    Gate("registry_publish", {"name": "gate-pub", "version": 1, "repo_id": "alice/gate-pub", "private": False}, [
        Variant("name", {"name": "gate-pub-b"}),
        Variant("version", {"version": 2}),
        Variant("repo_id", {"repo_id": "alice/elsewhere"})], status="published"),
    Gate("loop_schedule", {"spec_path": "{loop}", "flavor": "a10g-small", "timeout_s": 1800}, [
        Variant("spec_path", {"spec_path": "{loop_other}"}),
        Variant("spec file edited in place", edit=("loop", "loop_edit")),
        Variant("flavor", {"flavor": "a10g-large"}),
        Variant("timeout_s", {"timeout_s": 3600}),
        Variant("schedule", {"schedule": "@daily"}),
        Variant("max_spend_usd", {"max_spend_usd": 0.75})], status="submitted"),
    Gate("sweep_submit", {"spec_path": "{sweep}"}, [
        Variant("spec_path", {"spec_path": "{sweep_other}"}),
        Variant("spec file edited in place", edit=("sweep", "sweep_edit")),
        Variant("spec instead of spec_path", {"spec_path": None, "spec": "{sweep_edit:json}"})],
         effect="sweeps", reused="refused by the ledger"),  # the ledger refuses a repeat before the token is read
    Gate("traces_push", {"repo": "alice/gate-traces", "paths": ["{sessions}"], "public": True}, [
        Variant("repo", {"repo": "alice/elsewhere"}),
        Variant("paths", {"paths": ["{sessions_other}"]}),
        Variant("project", {"project": "/tmp/proj"}),
        Variant("since", {"since": "2000-01-01"}),
        Variant("until", {"until": "2100-01-01"})], status="pushed", grow=("sessions", "new_session")),
]


def _fill(value, files: dict[str, Path]):
    if isinstance(value, list):
        return [_fill(item, files) for item in value]
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        key, _, as_json = value[1:-1].partition(":")
        return json.loads(files[key].read_text()) if as_json else str(files[key])
    return value


def _args(gate: Gate, files: dict[str, Path], change: dict | None = None) -> dict:
    merged = {**gate.call, **(change or {})}
    return {k: _fill(v, files) for k, v in merged.items() if v is not None}


def _effects(world: World, gate: Gate) -> int:
    if gate.effect == "sweeps":
        from mcp_server.sweeps import list_sweeps

        return len(list_sweeps())
    return world.posts()


def _params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "serve", "--toolsets", "all"],
                                 env=os.environ.copy(), cwd=str(REPO))


def _session(flow):
    async def main():
        with anyio.fail_after(240):
            async with Client(_params(), mode="legacy") as client:  # no elicitation callback: it cannot ask
                return await flow(client)
    return anyio.run(main)


def _text(result) -> str:
    return " ".join(c.text for c in result.content if getattr(c, "text", None)) if result.content else ""


def _refused(result, needle: str) -> str | None:
    """None when ``result`` is an error containing ``needle``, else what it was."""
    if result.is_error and needle in _text(result):
        return None
    return f"not refused with '{needle}': error={result.is_error} {_text(result)[:300]}"


async def _gate_cases(client, world: World, gate: Gate, foreign_token: str) -> dict[str, str | None]:
    """Every case of one gated tool: {case: None when it held, else what happened}."""
    f, out = world.files, {}
    args = _args(gate, f)
    before = _effects(world, gate)
    quote = await client.call_tool(gate.tool, args)
    body = quote.structured_content or {}
    token = (body.get("decision") or {}).get("approval_token")
    out["no approval → a quote, nothing done"] = None if (
        not quote.is_error and body.get("status") == "approval_required" and token
        and _effects(world, gate) == before) else f"{quote.is_error} {_text(quote)[:300]}"
    if not token:
        return out
    for variant in gate.variants:
        saved = None
        if variant.edit:
            target, source = variant.edit
            saved = f[target].read_text()
            f[target].write_text(f[source].read_text())
        try:
            before = _effects(world, gate)
            result = await client.call_tool(gate.tool, {**_args(gate, f, variant.change), "approval_token": token})
            problem = _refused(result, "approval token was issued for different arguments")
            if problem is None and _effects(world, gate) != before:
                problem = "refused, but it acted anyway"
            out[f"token with {variant.label} changed → refused"] = problem
        finally:
            if saved is not None:
                f[target].write_text(saved)
    for label, other, needle in (("forged token → refused", "tp-approve-forged", "not one this server issued"),
                                 ("another tool's token → refused", foreign_token, "different arguments")):
        out[label] = _refused(await client.call_tool(gate.tool, {**args, "approval_token": other}), needle)
    before = _effects(world, gate)
    good = await client.call_tool(gate.tool, {**args, "approval_token": token})
    gbody = good.structured_content or {}
    out["its own token → done once"] = None if (
        not good.is_error and gbody.get("status") == gate.status and _effects(world, gate) > before
        and (gbody.get("decision") or {}).get("via") == "token") else f"{good.is_error} {_text(good)[:300]}"
    if gate.grow:  # something new to do, so the second use cannot pass as "nothing to do"
        folder, new = gate.grow
        (f[folder] / f[new].name).write_bytes(f[new].read_bytes())
    before = _effects(world, gate)
    again = await client.call_tool(gate.tool, {**args, "approval_token": token})
    out["the same token again → refused"] = _refused(again, gate.reused) or (
        None if _effects(world, gate) == before else "refused, but it acted anyway")
    return out


@pytest.fixture(scope="module")
def mcp_outcomes(world) -> dict[str, dict[str, str | None]]:
    """Every gated tool's cases in one server session (a sweep last: its controller keeps submitting)."""
    async def flow(client):
        from mcp_server.approval import TokenStore

        outcomes, previous = {}, "some_other_tool"
        for gate in CASES:  # a fresh, unused token this server issued for the previous tool
            foreign = TokenStore().issue(previous, _args(gate, world.files), 0.5)[0]
            outcomes[gate.tool] = await _gate_cases(client, world, gate, foreign)
            previous = gate.tool
        return outcomes

    return _session(flow)


@pytest.mark.parametrize("tool", [gate.tool for gate in CASES])
def test_mcp_face_refuses_without_approval(mcp_outcomes, tool):
    cases = mcp_outcomes[tool]
    gate = next(g for g in CASES if g.tool == tool)
    assert len(cases) == 1 + len(gate.variants) + 2 + 2, cases  # every case ran
    failed = {case: why for case, why in cases.items() if why is not None}
    assert not failed, json.dumps(failed, indent=1)


# --- the daily budget across a sweep and a restart -------------------------------------------------------


def _submitted(world: World, project: str, runs: int, timeout: float = 90) -> float:
    """What ``project`` was charged once the sweep's controller submitted its ``runs`` runs to HF Jobs."""
    from mcp_server.approval import Budget

    deadline = time.time() + timeout
    while time.time() < deadline:
        status = Budget().status(project)
        jobs = [j for j in list(world.hub.state.jobs.values()) if (j["labels"] or {}).get("sweep")]
        if status.open_charges >= runs and len(jobs) >= runs:
            return status.charged_usd
        time.sleep(0.3)
    raise AssertionError(f"the sweep's {runs} runs were not submitted and charged to '{project}' in {timeout} s: "
                         f"{status}, {len(jobs)} jobs")


def test_the_daily_budget_holds_across_a_sweep_and_a_restart(world, mcp_outcomes):
    """The sweep mcp_outcomes approved (2 runs × t4-small × 1 h = $0.80 of a $1.00 day) charged each run; then a
    second sweep and a paid job no longer fit, in one server and in a restarted one."""
    assert mcp_outcomes["sweep_submit"]["its own token → done once"] is None
    assert _submitted(world, SWEEP_PROJECT, 2) == pytest.approx(0.8)
    more = _sweep_spec(world.files["data"], "gate-more", [16, 32])
    job = {"script_path": str(world.files["script"]), "backend": "hf", "flavor": "a10g-small", "timeout_s": 1800,
           "project": SWEEP_PROJECT}

    async def flow(client):
        status = (await client.call_tool("budget_status", {"project": SWEEP_PROJECT})).structured_content
        sweep = await client.call_tool("sweep_submit", {"spec": more})
        quote = (await client.call_tool("jobs_submit", job)).structured_content
        paid = await client.call_tool("jobs_submit", {**job, "approval_token": quote["decision"]["approval_token"]})
        return status, sweep, paid

    jobs_before = len(world.hub.requests("POST", r"/api/jobs/[^/]+"))
    for _ in range(2):  # a fresh server process each time: the charges are on disk
        status, sweep, paid = _session(flow)
        assert (status["limit_usd"], status["charged_usd"], status["open_charges"]) == (SWEEP_LIMIT, 0.8, 2)
        assert _refused(sweep, "Budget refused") is None and "$0.80" in _text(sweep)
        assert _refused(paid, "Budget refused") is None and SWEEP_PROJECT in _text(paid)
    assert len(world.hub.requests("POST", r"/api/jobs/[^/]+")) == jobs_before  # nothing more was submitted


# --- the CLI twins ---------------------------------------------------------------------------------------


def _tunepack() -> list[str]:
    script = Path(sys.executable).parent / "tunepack"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mcp_server.cli"]


def _cli(*args: str) -> subprocess.Popen:
    """``tunepack ARGS`` with no TTY (stdin is /dev/null, output captured), as an agent's shell would run it."""
    return subprocess.Popen([*_tunepack(), *args], cwd=REPO, env=os.environ.copy(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_cli_twins_hold_the_budget_and_the_explicit_flags(world):
    """A person at the keyboard is the approval; the daily budget still refuses, public needs --public and a paid
    sweep --yes. The commands run in parallel."""
    from mcp_server.approval import Budget
    from mcp_server.sweeps import list_sweeps

    f = world.files
    Budget().set_limit("gate-cli", 0.25)  # a t4-small hour is $0.40
    Budget().set_limit("tunepack-evals", 0.01)
    Budget().set_limit("gate-sweep-cli", 0.5)  # the sweep is $0.80
    sweeps = len(list_sweeps())
    cases = {  # case → (twin of, command, expected exit code, what stderr says)
        "run over budget": ("pipeline_run", ["run", str(f["cfg_cli"]), "--backend", "hf", "--flavor", "t4-small",
                                             "--timeout", "3600", "--yes"], 1, "Budget refused"),
        "job over budget": ("jobs_submit", ["jobs", "submit", "--backend", "hf", "--flavor", "a10g-small",
                                            "--timeout", "1800", "--project", "gate-cli", "--yes", str(f["script"])],
                            1, "Budget refused"),
        "paid job without a terminal": ("jobs_submit", ["jobs", "submit", "--backend", "hf", "--flavor", "a10g-small",
                                                        "--timeout", "1800", "--project", "gate-cli",
                                                        str(f["script"])], 1, "No terminal"),
        "eval over budget": ("eval_start", ["eval", "run", "gate-eval-cli", "--backend", "hf", "--flavor",
                                            "a10g-small", "--timeout", "3600", "--yes"], 1, "Budget refused"),
        "publish without --public": ("registry_publish", ["registry", "publish", "gate-pub-b", "--repo",
                                                          "alice/gate-cli-private"], 0, ""),
        "paid sweep without --yes": ("sweep_submit", ["sweep", "submit", str(f["sweep_cli"])], 1, "--yes"),
        "paid sweep over budget": ("sweep_submit", ["sweep", "submit", str(f["sweep_cli"]), "--yes"], 1,
                                   "Budget refused"),
        "push without --public": ("traces_push", ["traces", "push", str(f["sessions_cli"]), "--repo",
                                                  "alice/gate-cli-traces"], 0, ""),
        "paid loop schedule without a terminal": ("loop_schedule", ["loop", "schedule", str(f["loop_cli"]),
                                                                    "--flavor", "a10g-small", "--timeout", "1800"],
                                                  1, "No terminal"),
    }
    assert {twin for twin, *_ in cases.values()} == set(CLI_TWINS)
    running = {case: _cli(*command) for case, (_, command, _, _) in cases.items()}
    failed = {}
    for case, proc in running.items():
        out, err = proc.communicate(timeout=180)
        _, _, code, needle = cases[case]
        if proc.returncode != code or needle not in err:
            failed[case] = f"exit {proc.returncode}: {err.strip()[-400:]}"
    assert not failed, json.dumps(failed, indent=1)
    jobs = [j["labels"] or {} for j in world.hub.state.jobs.values()]
    assert not [j for j in jobs if j.get("project") in ("gate-cli", "gate-sweep-cli")
                or j.get("registry_name") == "gate-eval-cli"], "a refused command reached HF Jobs"
    assert len(list_sweeps()) == sweeps, "a refused sweep was started"
    repos = world.hub.state.repos
    private = {"alice/gate-cli-private", "alice/gate-cli-traces"}
    assert all(repos[r]["private"] for r in private), "public only with --public typed"
    assert not [r for r in repos if "gate-cli" in r and r not in private], "a refused command uploaded data"
