"""The pipeline on HF Jobs (stand-in): data upload, script pinned to repo@revision and pushing to the
output repo, timeout policy, and recording the finished run in the registry with its Hub commit."""

import json

import pytest

from support.common import run_cli, short_conversation, write_jsonl
from mcp_server.approval import Budget, Consent
from mcp_server.config import parse_config
from mcp_server.errors import ConfigError, JobError
from mcp_server.jobs import get_backend
from mcp_server.jobs.transport import script_from_command
from mcp_server.pipeline import start_pipeline
from mcp_server.pipeline.remote import MIN_TRAIN_TIMEOUT_S, finish_remote, suggest_timeout_s
from mcp_server.registry import LocalRegistry


def config(tmp_path, **extra):
    data = write_jsonl(tmp_path / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
    body = {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(data)},
            "training": {"max_steps": 20}, "tracking": {"project": "remote"}, "output": {"name": "remote-sft"}}
    body.update(extra)
    return parse_config(body)


def script_of(request) -> str:
    return script_from_command(request.body["command"])


def test_start_uploads_data_and_pins_the_script(hub, tmp_path):
    quote = start_pipeline(config(tmp_path), backend=get_backend("hf"), timeout_s=3600, flavor="a10g-small")
    assert quote.job is None and quote.run_dir is None and not hub.requests("POST", "/api/jobs/alice")
    assert not [r for r in hub.state.repos if r.startswith("alice/")]  # no consent: a quote, nothing uploaded
    started = start_pipeline(config(tmp_path), backend=get_backend("hf"), timeout_s=3600, flavor="a10g-small",
                             consent=Consent(token=quote.spend.decision.approval_token))
    data_repo = next(r for r, v in hub.state.repos.items() if v["type"] == "dataset")
    assert data_repo.startswith("alice/tunepack-data-") and hub.state.repos[data_repo]["private"]
    revision = hub.state.repos[data_repo]["commits"][-1]
    (submit,) = hub.requests("POST", "/api/jobs/alice")
    text = script_of(submit)
    assert f"'hub_id': '{data_repo}'" in text and f"'revision': '{revision}'" in text and "'path': []" in text
    assert "'push': {'repo_id': 'alice/remote-sft', 'private': True}" in text
    assert 'hub_strategy="checkpoint"' in text
    assert submit.body["secrets"] == {"HF_TOKEN": hub.state.token} and submit.body["timeoutSeconds"] == 3600
    assert submit.body["labels"]["stage"] == "train" and submit.body["labels"]["output_repo"] == "alice/remote-sft"
    assert started.job.backend == "hf" and started.job.stage == "SCHEDULING"


def test_timeout_policy(hub, tmp_path):
    cfg = config(tmp_path)
    suggested = suggest_timeout_s(cfg, 6, 200, "a10g-small")
    assert suggested >= MIN_TRAIN_TIMEOUT_S and suggested % 600 == 0
    with pytest.raises(JobError, match=f"pass timeout_s={suggested}"):
        start_pipeline(cfg, backend=get_backend("hf"), flavor="a10g-small")
    with pytest.raises(JobError, match="under 30 minutes"):
        start_pipeline(cfg, backend=get_backend("hf"), flavor="a10g-small", timeout_s=600)
    start_pipeline(cfg, backend=get_backend("hf"), flavor="a10g-small", timeout_s=600, force=True,
                   consent=Consent.keyboard(yes=True))
    assert len(hub.requests("POST", "/api/jobs/alice")) == 1


def test_tiny_models_stay_local(hub, tmp_path):
    with pytest.raises(ConfigError, match="cannot run on HF Jobs"):
        start_pipeline(config(tmp_path, model={"name": "tiny:qwen3"}), backend=get_backend("hf"), timeout_s=3600)


def finished_logs(cfg, run_name: str) -> list[str]:
    """The lines a successful remote training job prints (metric lines, then DONE with the manifest)."""
    manifest = {"config": cfg.model_dump(mode="json"), "tunepack_version": "0.1.0",
                "quantization": {"used_4bit": True, "reason": "auto: CUDA present"}, "chat_template": "model",
                "dataset": {"format": "messages", "train_rows": 6, "eval_rows": 0, "fingerprint": "f", "files": []},
                "mask_check": {"rows_checked": 6, "trained_token_share": 0.2, "longest_row_tokens": 90,
                               "max_length": 1024, "rows_truncated": 0, "rows_dropped": 0},
                "training": {"steps": 20, "train_runtime_s": 60.0, "first_loss": 2.0, "last_loss": 1.0},
                "device": {"type": "cuda", "name": "T4"}, "trackio": {"project": "remote", "run": run_name},
                "libraries": {"trl": "1.16.0"}}
    return [
        'TUNEPACK_METRIC {"step": 10, "max_steps": 20, "loss": 2.0, "mean_token_accuracy": 0.3}',
        'TUNEPACK_METRIC {"step": 20, "max_steps": 20, "loss": 1.0, "mean_token_accuracy": 0.6}',
        "TUNEPACK_DONE " + json.dumps({"steps": 20, "first_loss": 2.0, "last_loss": 1.0, "used_4bit": True,
                                       "hub_repo": "alice/remote-sft", "hub_commit": "abc123", "manifest": manifest}),
    ]


def test_finish_records_repo_and_commit_and_pushes_the_card(hub, tmp_path):
    cfg = config(tmp_path, eval={"tasks": ["humaneval"]})
    started = start_pipeline(cfg, backend=get_backend("hf"), timeout_s=3600, flavor="t4-small",
                             consent=Consent.keyboard(yes=True))
    job_id = started.job.id
    hub.state.repos["alice/remote-sft"] = {"type": "model", "private": True, "files": {}, "commits": ["c0"]}
    hub.state.logs[job_id] = finished_logs(cfg, started.run_name)
    backend = get_backend("hf")
    assert finish_remote(backend, job_id) is None  # not finished yet
    hub.set_stage(job_id, "COMPLETED")
    result = finish_remote(backend, job_id)
    assert result["hub_repo"] == "alice/remote-sft" and result["hub_commit"] == "abc123"
    # the config's eval did not run in the training job: the outcome names the call that runs it
    assert result["eval"]["ran"] is False and f"eval_start(name='remote-sft', version={result['registry_version']}, " \
        "backend='hf', flavor='t4-small')" in result["eval"]["next_step"]
    entry = LocalRegistry().get("remote-sft", result["registry_version"])
    assert entry.hub_repo == "alice/remote-sft" and entry.hub_commit == "abc123" and entry.job_id == job_id
    card = hub.state.repos["alice/remote-sft"]["files"]["README.md"].decode()
    assert "base_model: Qwen/Qwen3-0.6B" in card and "| loss | 2 | 1 | 1 | 2 |" in card
    again = finish_remote(backend, job_id)
    assert again == result and len(LocalRegistry().list("remote-sft")) == 1


def test_cli_run_on_hf_follows_the_job_and_records_it(hub, tmp_path):
    import os
    import subprocess
    import sys
    import time

    # the placement is the config's job section: `tunepack run CONFIG` alone, as preflight's last line says
    cfg = config(tmp_path, job={"backend": "hf", "flavor": "t4-small", "timeout_s": 3600})
    path = tmp_path / "remote.yaml"
    path.write_text(json.dumps(cfg.model_dump(mode="json")))
    hub.state.repos["alice/remote-sft"] = {"type": "model", "private": True, "files": {}, "commits": ["c0"]}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "run", str(path), "--json", "--yes"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    deadline = time.time() + 60
    while not hub.requests("POST", "/api/jobs/alice") and time.time() < deadline:
        time.sleep(0.2)
    job_id = next(iter(hub.state.jobs))
    assert hub.state.jobs[job_id]["flavor"] == "t4-small" and hub.state.jobs[job_id]["timeoutSeconds"] == 3600
    hub.state.logs[job_id] = finished_logs(cfg, hub.state.jobs[job_id]["labels"]["run"])
    hub.set_stage(job_id, "COMPLETED")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    result = json.loads(out)
    assert result["hub_repo"] == "alice/remote-sft" and result["hub_commit"] == "abc123" and result["steps"] == 20
    assert "charged up to $0.40 to project 'remote'" in err  # the command was the approval; the budget applies


def test_preflight_quotes_the_configs_flavor_and_timeout_and_run_asks_for_the_yes(hub, tmp_path):
    """A config that names a GPU flavor is quoted at that flavor for its own timeout, and `tunepack run` of it
    with no terminal and no --yes starts nothing (the job section is the placement, not a local run)."""
    cfg = config(tmp_path, job={"backend": "hf", "flavor": "a10g-small", "timeout_s": 7200},
                 output={"name": "remote-gpu"}, eval={"tasks": ["humaneval"], "limit": 4})
    path = tmp_path / "gpu.yaml"
    path.write_text(json.dumps(cfg.model_dump(mode="json")))
    done = run_cli("preflight", str(path), "--no-smoke", "--json", timeout=120)
    report = json.loads(done.stdout)
    cost = report["cost"]
    assert (cost["backend"], cost["flavor"], cost["timeout_s"]) == ("hf", "a10g-small", 7200), cost
    assert cost["needs_approval"] and cost["worst_case_usd"] == round(cost["price_per_hour_usd"] * 2, 2) > 1
    # the job's environment, resolved as its `uv run` will before the GPU is billed: the pinned versions
    job_env = {c["name"]: c for c in report["checks"]}["job_env"]
    versions = report["job_env"]["versions"]
    assert job_env["status"] == "pass", job_env
    assert (versions["transformers"], versions["trl"], versions["torch"]) == ("5.25.0", "1.16.0", "2.13.0")
    eval_env = {c["name"]: c for c in report["checks"]}["job_env_eval"]  # the eval job after it, resolved too
    assert eval_env["status"] == "pass" and eval_env["detail"].startswith("eval job: resolved with uv"), eval_env
    assert report["job_env"]["eval"]["versions"]["transformers"] == "5.25.0"
    # the eval is not skipped unsaid: on HF it is a job of its own after training, said before spending
    (eval_time,) = [c for c in report["checks"] if c["name"] == "eval_time"]
    assert "run as their own job (eval_start" in eval_time["detail"] and eval_time["status"] == "pass"
    refused = run_cli("run", str(path), timeout=120)
    assert refused.returncode != 0 and "a10g-small" in refused.stderr, refused.stderr[-2000:]
    assert not hub.requests("POST", "/api/jobs/alice") and "alice/remote-gpu" not in hub.state.repos
    # a local run named on the command line does not inherit the GPU flavor
    from mcp_server.pipeline import placement

    assert placement(cfg, "local") == ("local", None, 7200) and placement(cfg) == ("hf", "a10g-small", 7200)


def test_the_cli_is_held_to_the_daily_budget(hub, tmp_path):
    cfg = config(tmp_path, tracking={"project": "remote-budget"})
    path = tmp_path / "remote.yaml"
    path.write_text(json.dumps(cfg.model_dump(mode="json")))
    Budget().set_limit("remote-budget", 0.25)
    done = run_cli("run", str(path), "--backend", "hf", "--flavor", "t4-small", "--timeout", "3600", "--yes",
                   timeout=120)
    assert done.returncode == 1 and "Budget refused" in done.stderr and "remote-budget" in done.stderr
    assert not hub.requests("POST", "/api/jobs/alice") and not [r for r in hub.state.repos if r.startswith("alice/")]


def test_jobs_status_from_the_cli_settles_a_finished_remote_run(hub, tmp_path):
    cfg = config(tmp_path, tracking={"project": "remote-status"}, output={"name": "remote-status"})
    started = start_pipeline(cfg, backend=get_backend("hf"), timeout_s=3600, flavor="t4-small",
                             consent=Consent.keyboard(yes=True))
    assert Budget().status("remote-status").open_charges == 1
    hub.state.repos["alice/remote-sft"] = {"type": "model", "private": True, "files": {}, "commits": ["c0"]}
    hub.state.logs[started.job.id] = finished_logs(cfg, started.run_name)
    hub.set_stage(started.job.id, "COMPLETED")
    done = run_cli("jobs", "status", started.job.id, "--backend", "hf", timeout=120)
    assert done.returncode == 0, done.stderr
    view = json.loads(done.stdout)
    assert view["job"]["stage"] == "COMPLETED" and view["outcome"]["registered"]["hub_commit"] == "abc123"
    assert LocalRegistry().get("remote-status").hub_repo == "alice/remote-sft"  # recorded, as jobs_status does
    assert Budget().status("remote-status").open_charges == 0  # and the charge settled


def test_a_missing_revision_is_named_as_a_revision_not_a_missing_repo(hub, tmp_path):
    """model.revision that the repo lacks: the error says the revision, with the key to change (it said the repo
    was not found, with a fix about listing jobs)."""
    from huggingface_hub import HfApi

    from mcp_server.errors import HubError
    from mcp_server.jobs.cache import pinned_commit

    api = HfApi(endpoint=hub.endpoint, token=hub.state.token)
    api.create_repo("alice/base-model", private=True)
    (tmp_path / "config.json").write_text("{}")
    api.upload_file(path_or_fileobj=str(tmp_path / "config.json"), path_in_repo="config.json", repo_id="alice/base-model")
    assert pinned_commit("alice/base-model", None)  # main resolves
    with pytest.raises(HubError) as missing_revision:
        pinned_commit("alice/base-model", "no-such-branch")
    assert "has no such revision" in missing_revision.value.problem and "model.revision" in missing_revision.value.fix
    with pytest.raises(HubError) as missing_repo:
        pinned_commit("alice/no-such-model", None)
    assert "was not found" in missing_repo.value.problem
