"""Starting evals as jobs (local and HF Jobs stand-in), reading results, and the errors on the way."""

from __future__ import annotations

import json

import pytest

from mcp_server.approval import Budget
from mcp_server.config.eval_section import EvalSection
from mcp_server.errors import EvalError
from mcp_server.evals import job as eval_job
from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.runner import resolve_model, run_eval
from mcp_server.approval import Consent
from mcp_server.evals.service import eval_results, start_eval
from mcp_server.jobs import get_backend
from mcp_server.jobs.transport import script_from_command
from mcp_server.registry import LocalRegistry
from mcp_server.registry.card import NOT_EVALUATED, RESULTS_END, RESULTS_START

CARD = f"---\nlibrary_name: peft\n---\n\n# remote\n\n{RESULTS_START}\n{NOT_EVALUATED}{RESULTS_END}\n"


def remote_version(name: str, base: str = "Qwen/Qwen3-0.6B"):
    manifest = {"config": {"model": {"name": base},
                           "data": {"hub_id": "alice/agent-data", "revision": "r1", "split": "train", "path": []}}}
    return LocalRegistry().record_remote(name, manifest=manifest, hub_repo=f"alice/{name}", hub_commit="c1",
                                         card=lambda v: CARD)


def script_of(request) -> str:
    return script_from_command(request.body["command"])


def test_a_remote_eval_runs_the_rendered_script_and_records_its_results(hub):
    entry = remote_version("remote-eval")
    ev = EvalSection(tasks=["humaneval"], limit=3, sandbox="unsafe-host")
    quote = start_eval(entry.name, ev=ev, backend=get_backend("hf"), flavor="a10g-small", timeout_s=3600)
    assert quote.job is None and quote.spend.decision.status == "approval_required"  # nobody agreed yet
    assert not hub.requests("POST", r"/api/jobs/[^/]+")
    before = Budget().status("tunepack-evals").charged_usd  # other tests of the session may have charged it
    started = start_eval(entry.name, ev=ev, backend=get_backend("hf"), flavor="a10g-small", timeout_s=3600,
                         consent=Consent(token=quote.spend.decision.approval_token))
    charged = started.spend.budget.charged_usd - before
    assert charged == pytest.approx(started.spend.cost.worst_case_usd) and charged > 0  # charged to tunepack-evals
    (submit,) = hub.requests("POST", r"/api/jobs/[^/]+")
    body, script = submit.body, script_of(submit)
    assert body["flavor"] == "a10g-small" and body["secrets"] == {"HF_TOKEN": hub.state.token}
    assert hub.state.token not in script and hub.state.token not in json.dumps(body["environment"])
    assert "'adapter': 'alice/remote-eval'" in script and "'base': 'Qwen/Qwen3-0.6B'" in script
    assert "'train_data': ['hub:alice/agent-data@r1#train']" in script and "'sandbox': 'unsafe-host'" in script
    assert started.job.labels["stage"] == "eval"
    with pytest.raises(EvalError, match="still"):
        eval_results(job_id=started.job.id, backend=get_backend("hf"))
    results = {"tasks": [{"task": "humaneval", "metric": "pass@1", "n": 3, "samples": 1,
                          "scores": {"base": 0.0, "adapter": 1 / 3}, "status": {"base": "scored", "adapter": "scored"},
                          "contamination": {"contaminated": 0, "n_problems": 3, "share": 0.0}}],
               "sandbox": "unsafe-host", "isolated": False, "temperature": 0.0, "limit": 3, "ids": []}
    hub.state.logs[started.job.id] = ["[tunepack] evaluating", "TUNEPACK_EVAL " + json.dumps(results)]
    hub.set_stage(started.job.id, "COMPLETED")
    summary = eval_results(job_id=started.job.id, backend=get_backend("hf"))
    assert summary["tasks"][0]["scores"]["adapter"] == pytest.approx(1 / 3)
    card = LocalRegistry().get("remote-eval").card_path
    text = open(card).read()
    assert "| humaneval | pass@1 | 3 | 0.000 [0.00, 0.56] | 0.333 [0.06, 0.79] | 0/3 (0.0%) |" in text and "unsafe-host" in text
    assert "model-index" not in text  # an unsandboxed score never reaches model-index
    assert eval_results(name="remote-eval")["tasks"] == summary["tasks"]


def test_remote_evals_need_a_published_adapter_and_a_hub_base(hub, tmp_path):
    registry = LocalRegistry()
    entry = remote_version("tiny-remote", base="/abs/tiny-model")
    with pytest.raises(EvalError, match="local folder"):
        start_eval(entry.name, ev=EvalSection(tasks=["humaneval"]), backend=get_backend("hf"))
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen3-0.6B"}))
    (adapter / "adapter_model.safetensors").write_bytes(b"0")
    (adapter / "tunepack_manifest.json").write_text(json.dumps({"config": {"model": {"name": "Qwen/Qwen3-0.6B"},
                                                                           "data": {"path": []}}}))
    local = registry.push(adapter, "local-only", card=CARD)
    with pytest.raises(EvalError, match="publish it first"):
        start_eval(local.name, ev=EvalSection(tasks=["humaneval"]), backend=get_backend("hf"))


def test_missing_training_data_blocks_the_contamination_check_unless_allowed(tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen3-0.6B"}))
    (adapter / "adapter_model.safetensors").write_bytes(b"0")
    gone = str(tmp_path / "gone.jsonl")
    (adapter / "tunepack_manifest.json").write_text(json.dumps({
        "config": {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": [gone]}},
        "dataset": {"files": [{"path": gone}]}}))
    entry = LocalRegistry().push(adapter, "no-data", card=CARD)
    with pytest.raises(EvalError, match="training data of this adapter is gone") as err:
        eval_job.prepare(entry, EvalSection(tasks=["humaneval"]), tmp_path / "run")
    assert "allow_contaminated" in err.value.fix
    script = eval_job.prepare(entry, EvalSection(tasks=["humaneval"], allow_contaminated=True), tmp_path / "run")
    assert "'train_data': []" in script.read_text()
    with pytest.raises(EvalError, match="No eval tasks"):
        eval_job.prepare(entry, EvalSection(), tmp_path / "run2")
    with pytest.raises(EvalError, match="no eval results yet") as err:
        eval_results(name="no-data")
    assert "eval_start" in err.value.fix


def test_model_resolution():
    name, args = resolve_model({"label": "adapter", "base": "Qwen/Qwen3-0.6B", "adapter": "alice/x"}, "hf", 0.0)
    assert name == "hf/alice/x" and args["model_path"] == "alice/x" and args["do_sample"] is False
    name, args = resolve_model({"label": "base", "base": "Qwen/Qwen3-0.6B"}, "auto", 0.7)  # no CUDA here
    assert name == "hf/Qwen/Qwen3-0.6B" and "do_sample" not in args
    with pytest.raises(KitError, match="vLLM is not installed"):
        resolve_model({"label": "base", "base": "Qwen/Qwen3-0.6B"}, "vllm", 0.0)
    with pytest.raises(KitError, match="does not exist"):
        resolve_model({"label": "base", "base": "/no/such/model"}, "hf", 0.0)
    with pytest.raises(KitError, match="Unknown eval spec keys"):
        run_eval({"tasks": ["humaneval"], "models": [], "epochs": 3})


def test_eval_run_from_the_cli_is_held_to_the_daily_budget(hub):
    from support.common import run_cli
    from mcp_server.approval import Budget

    remote_version("budget-eval")
    Budget().set_limit("tunepack-evals", 0.01)
    try:
        done = run_cli("eval", "run", "budget-eval", "--backend", "hf", "--flavor", "a10g-small", "--timeout", "3600",
                       "--yes", timeout=120)
    finally:
        Budget().set_limit("tunepack-evals", 10.0)
    assert done.returncode == 1 and "Budget refused" in done.stderr and "tunepack-evals" in done.stderr
    assert not hub.requests("POST", r"/api/jobs/[^/]+")  # a paid eval from the CLI is charged like one from MCP
