"""The paid path, executed: tunepack's hf backend against a Jobs stand-in that runs what it is given (real
process groups, `bash -c` as sent, the uv shim checking the PEP 723 pins, mounts, its own /tmp per job) and a Hub
stand-in that stores what is pushed. Each test asserts on what the Hub, the registry and Trackio hold at the end.

The world: the Hub holds a Gemma 4 replica under the tutorial's model id and a dataset repo of raw Pi sessions.
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

import pytest

from support.remote import GEMMA, SESSIONS, api, hf_twin, seed_folder, seed_sessions, wait_until
from support.sweeps import unique
from support.tutorial import cpu_twin, write_sessions
from mcp_server.approval import Budget, Consent
from mcp_server.config import load_config
from mcp_server.jobs import get_backend, markers
from mcp_server.pipeline import start_pipeline
from mcp_server.pipeline.settle import settle
from mcp_server.registry import LocalRegistry
from mcp_server.tracking import TrackioStore

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def replica(tmp_path_factory) -> Path:
    """The Gemma 4 replica (its own class, special tokens and stock template), its tokenizer built from the
    converted Pi sessions the tests train on."""
    from mcp_server.traces.spine import training_config
    from mcp_server.train.tiny_model import TINY_VOCAB, build_tiny_model

    folder = tmp_path_factory.mktemp("replica")
    cfg = training_config(load_config(cpu_twin(write_sessions(folder / "sessions"), "replica", folder)), folder / "rows")
    return build_tiny_model(cfg.data.path, folder / "gemma-4-E2B-it", arch="gemma4", vocab_size=TINY_VOCAB)


@pytest.fixture
def world(jobs_hub, replica, tmp_path) -> dict:
    model_commit = seed_folder(jobs_hub, GEMMA, replica)
    return {"hub": jobs_hub, "model_commit": model_commit, "sessions_commit": seed_sessions(jobs_hub, tmp_path)}


def log_of(hub, job_id: str) -> str:
    return "\n".join(hub.job_log(job_id))


def finished(hub, job_id: str, timeout: float = 240) -> dict:
    job = hub.wait_job(job_id, timeout=timeout)
    assert job["status"]["stage"] == "COMPLETED", log_of(hub, job_id)[-6000:]
    return job


def trained_steps(project: str, run: str) -> list[int]:
    return [p.step for p in TrackioStore().history(project, run) if "loss" in p.values]


@pytest.fixture(scope="module")
def trained(replica, tmp_path_factory):
    """(a) once for the module: the tutorial's twin on the hf backend, settled; later tests read what it left."""
    from support.standin.hub_service import HubStandIn

    pytest.importorskip("pyseccomp")
    tmp = tmp_path_factory.mktemp("trained")
    mp = pytest.MonkeyPatch()
    with HubStandIn() as hub:
        mp.setenv("HF_ENDPOINT", hub.endpoint)
        mp.setenv("HF_TOKEN", hub.state.token)
        model_commit = seed_folder(hub, GEMMA, replica)
        seed_sessions(hub, tmp)
        project = unique("e2e-twin")
        cfg = load_config(hf_twin(tmp, project, steps=6, save_steps=2))
        started_at = time.time()
        started = start_pipeline(cfg, backend=get_backend("hf"), timeout_s=3600, flavor="a10g-small",
                                 consent=Consent.keyboard(yes=True))
        job = finished(hub, started.job.id)
        backend = get_backend("hf")
        settled = settle(backend, backend.status(started.job.id))
        yield {"hub": hub, "project": project, "job": job, "settled": settled, "run": started.run_name,
               "model_commit": model_commit, "started": started, "started_at": started_at}
    mp.undo()


def test_a_the_tutorials_twin_trains_on_hf_and_settles(trained):
    hub, project, job = trained["hub"], trained["project"], trained["job"]
    client = api(hub)
    registered = trained["settled"]["registered"]
    # the rows went to a private dataset repo; the job mounted it and the model at their pinned commits
    data_repo = next(r for r in hub.state.repos if r.startswith("alice/tunepack-data-"))
    data_commit = client.dataset_info(data_repo).sha
    assert client.dataset_info(data_repo).private
    mounts = {m["repo"]: m["revision"] for m in hub.state.mounts if m["job"] == job["id"]}
    assert mounts == {GEMMA: trained["model_commit"], data_repo: data_commit}
    assert not [k for k in hub.state.downloads if k[0] == GEMMA]  # the weights came from the mount
    assert [i["installed"] for i in hub.state.installs if i["job"] == job["id"]] == [True]
    # the output repo holds the adapter, its manifest, the pushed checkpoint and tunepack's card
    repo = registered["hub_repo"]
    assert repo == f"alice/{project}" and client.model_info(repo).private
    files = set(client.list_repo_files(repo))
    assert {"adapter_model.safetensors", "adapter_config.json", "tunepack_manifest.json", "README.md",
            "last-checkpoint/trainer_state.json"} <= files
    adapter_config = json.loads(Path(client.hf_hub_download(repo, "adapter_config.json")).read_text())
    assert adapter_config["base_model_name_or_path"] == GEMMA  # not the job's mount path
    card = Path(client.hf_hub_download(repo, "README.md")).read_text()
    assert "tunepack" in card and "alice/tunepack-cache" in card and registered["card_commit"]
    manifest = json.loads(Path(client.hf_hub_download(repo, "tunepack_manifest.json")).read_text())
    assert manifest["job"]["model_loaded_from"] == "/tunepack/model" and manifest["training"]["steps"] == 6
    assert manifest["mask_check"]["windows"]["windowed"] > 0  # long sessions became windows
    # registry: repo + commit; budget: the worst-case charge replaced by the real cost
    entry = LocalRegistry().get(project)
    assert entry.hub_repo == repo and entry.hub_commit == registered["hub_commit"]
    assert Budget().status(project).open_charges == 0
    # (f) without a Space, the curve is imported into the local Trackio project, one value per step
    assert registered["trackio"]["imported_steps"] == 6
    assert trained_steps(project, trained["run"]) == [1, 2, 3, 4, 5, 6]
    # each point carries the time the job logged it (they were all the import's time): within the job's run
    from trackio.sqlite_storage import SQLiteStorage

    stamps = [row["timestamp"] for row in SQLiteStorage.get_logs(project, trained["run"]) if "loss" in row]
    imported_at = registered["finished_at"]
    times = [(s if not isinstance(s, str) else datetime.datetime.fromisoformat(s)).timestamp()
             for s in stamps]
    assert len(times) == 6 and times == sorted(times) and len(set(times)) == 6
    assert all(trained["started_at"] <= t < imported_at for t in times)
    assert settle(get_backend("hf"), get_backend("hf").status(job["id"]))["registered"] == registered  # once


def test_c_the_eval_job_scores_base_and_adapter_from_the_hub_repo(trained):
    from mcp_server.config.schema import EvalSection
    from mcp_server.evals.service import start_eval

    hub, project = trained["hub"], trained["project"]
    entry = LocalRegistry().get(project)
    ev = EvalSection(tasks=["humaneval"], limit=2, max_tokens=16, backend="hf", sandbox="confined")
    started = start_eval(project, ev=ev, backend=get_backend("hf"), flavor="a10g-small", timeout_s=1800,
                         consent=Consent.keyboard(yes=True))
    finished(hub, started.spend.job.id)
    backend = get_backend("hf")
    evaluated = settle(backend, backend.status(started.spend.job.id))["evaluated"]
    log = log_of(hub, started.spend.job.id)
    assert f"adapter {entry.hub_repo}@{entry.hub_commit[:12]}" in log  # read at the commit the registry holds
    (result,) = markers.parse(log)["EVAL"]
    # no namespaces in a job: the confined sandbox (own uid, Landlock, seccomp) isolates the generated code there
    assert result["sandbox"] == "confined" and result["isolated"] is True
    assert "[tunepack] sandbox: confined" in log
    scores = result["tasks"][0]["scores"]
    assert set(scores) == {"base", "adapter"} and all(0 <= s <= 1 for s in scores.values())
    # the Hub's card carries the eval's own table (not the placeholder), and the results file beside it
    assert [h["repo_id"] for h in evaluated["hub_card"]] == [entry.hub_repo] and evaluated["hub_card"][0]["commit"]
    card = Path(api(hub).hf_hub_download(entry.hub_repo, "README.md", revision=evaluated["hub_card"][0]["commit"]))
    text = card.read_text()
    assert evaluated["table"] in text and "Not evaluated yet" not in text
    assert f'from_pretrained("{entry.hub_repo}")' in text  # the usage snippet names the repo, no placeholder
    from huggingface_hub import ModelCard

    (indexed,) = ModelCard(text).data.eval_results  # what the Hub shows and ranks: the adapter's clean score
    assert indexed.metric_value == round(scores["adapter"], 4) and indexed.metric_type == "pass@1"
    on_hub = json.loads(Path(api(hub).hf_hub_download(entry.hub_repo, "eval_results.json",
                                                      revision=evaluated["hub_card"][0]["commit"])).read_text())
    assert on_hub["tasks"][0]["scores"] == scores


def test_c2_publishing_an_hf_trained_version_carries_its_adapter(trained):
    """The version an HF job trained has its weights in the job's output repo, not here: `tunepack registry
    publish` takes them from there at the recorded commit (it pushed a repo with no adapter)."""
    from support.common import run_cli

    hub, project = trained["hub"], trained["project"]
    entry = LocalRegistry().get(project)
    target = f"alice/{project}-pub"
    done = run_cli("registry", "publish", entry.name, "--version", str(entry.version), "--repo", target, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    pushed = json.loads(done.stdout)
    assert {"adapter_model.safetensors", "adapter_config.json", "README.md"} <= set(pushed["files"])
    client = api(hub)
    source = client.hf_hub_download(entry.hub_repo, "adapter_model.safetensors", revision=entry.hub_commit)
    copy = client.hf_hub_download(target, "adapter_model.safetensors", revision=pushed["commit"])
    assert Path(source).read_bytes() == Path(copy).read_bytes()
    card = Path(client.hf_hub_download(target, "README.md", revision=pushed["commit"])).read_text()
    assert "Not evaluated yet" not in card  # test_c's eval is on the published card too
    assert f'from_pretrained("{target}")' in card and "PATH_OR_REPO" not in card  # its usage loads from it


def sweep_spec(world, tmp_path, project: str, grid: dict, **extra) -> dict:
    base = load_config(hf_twin(tmp_path, project, **extra.pop("twin", {}))).model_dump(mode="json")
    return {"name": project[:40], "base": base, "backend": "hf", "flavor": "cpu-basic", "timeout_s": 3600,
            "max_concurrent": 2, "metric": {"name": "loss"}, "retries": 1, "grid": grid, **extra}


def run_controller(sweep_id: str, on_poll=None, poll_s: float = 0.5, timeout: float = 300) -> None:
    """The sweep controller, in this process, polling every ``poll_s`` (it runs as a local job in production)."""
    import time

    from mcp_server.sweeps import sweep_dir
    from mcp_server.sweeps.controller import Controller

    ctl = Controller(sweep_dir(sweep_id), poll_s=poll_s)
    deadline = time.time() + timeout
    while ctl.step():
        if on_poll:
            on_poll(ctl.state)
        assert time.time() < deadline, ctl.state.model_dump_json(indent=1)[-4000:]
        time.sleep(poll_s)


def test_b_a_killed_job_is_retried_and_resumes_at_the_last_pushed_step(world, tmp_path):
    from mcp_server.sweeps import submit_sweep

    hub, project = world["hub"], unique("e2e-retry")
    spec = sweep_spec(world, tmp_path, project, {"training.learning_rate": [0.01]}, canary={"enabled": False},
                      twin={"steps": 10, "save_steps": 2})
    sweep = submit_sweep(spec, start=False)
    output = f"alice/{sweep.sweep_id}-r01"
    killed: list[str] = []

    def kill_after_first_checkpoint(state) -> None:
        run = state.run("r01")
        if killed or not run.job_id:
            return
        try:
            files = set(api(hub).list_repo_files(output))
        except Exception:  # noqa: BLE001 — the repo is created by the job's first push
            return
        if "last-checkpoint/trainer_state.json" in files:
            hub.kill_job(run.job_id)
            killed.append(run.job_id)

    run_controller(sweep.sweep_id, on_poll=kill_after_first_checkpoint)
    from mcp_server.sweeps import read_state, sweep_dir

    run = read_state(sweep_dir(sweep.sweep_id)).run("r01")
    assert killed and run.status == "completed" and run.attempts == 2 and len(run.jobs) == 2
    first, second = (log_of(hub, j) for j in run.jobs)
    assert "the machine running the job was lost" in hub.state.jobs[run.jobs[0]]["status"]["message"]
    assert "resuming from the checkpoint pushed by an earlier attempt" in second, "\n".join(l for l in second.splitlines() if "checkpoint" in l or "resum" in l)
    resumed_at = min(m["step"] for m in markers.parse(second)["METRIC"] if "loss" in m) - 1
    assert 2 <= resumed_at < 10 and resumed_at % 2 == 0
    # the settled run: recorded once, its curve imported from both attempts with one value per step
    assert trained_steps(project, run.run_name) == list(range(1, 11))
    assert len([v for v in LocalRegistry().list(project) if v.run_name == run.run_name]) == 1
    assert [i["installed"] for i in hub.state.installs] == [True, False]  # the retry reused the cached packages


def test_d_a_sweep_on_hf_canary_first_stops_the_diverging_run_and_picks_the_best(world, tmp_path):
    from mcp_server.sweeps import read_state, select_sweep, submit_sweep, sweep_dir

    hub, project = world["hub"], unique("e2e-sweep")
    runs = [{"training.learning_rate": 0.01}, {"training.learning_rate": 1.0, "model.dtype": "float16"}]  # r02: NaN
    spec = sweep_spec(world, tmp_path, project, {}, runs=runs, canary={"run": "r01", "steps": 2},
                      early_stop={"patience": 2}, twin={"steps": 8, "save_steps": None})
    spec.pop("grid")
    sweep = submit_sweep(spec, start=False)
    run_controller(sweep.sweep_id)
    state = read_state(sweep_dir(sweep.sweep_id))
    jobs = sorted(hub.state.jobs.values(), key=lambda j: j["createdAt"])
    assert [j["labels"]["sweep_run"] for j in jobs] == ["r01", "r02"]  # the canary first, alone
    by_run = {r.id: r for r in state.runs}
    assert by_run["r02"].status == "stopped" and by_run["r02"].failure == "diverged", by_run["r02"]
    assert hub.state.jobs[by_run["r02"].jobs[0]]["status"]["stage"] == "CANCELED"  # really stopped
    assert by_run["r01"].status == "completed" and by_run["r01"].step == 8  # followed from the job's own log
    pick = select_sweep(sweep.sweep_id)
    assert pick.best is not None and pick.best.run == "r01"
    # each run pushed to its own repo; the cache: weights from the mount, packages installed once, then reused
    repos = {r for r in hub.state.repos if r.startswith(f"alice/{sweep.sweep_id}")}
    assert repos <= {f"alice/{sweep.sweep_id}-{r}" for r in ("r01", "r02")} and f"alice/{sweep.sweep_id}-r01" in repos
    assert not [k for k in hub.state.downloads if k[0] == GEMMA]
    assert [i["installed"] for i in hub.state.installs] == [True, False]


def test_e_preflight_runs_the_mask_check_as_an_hf_job_beside_the_local_smoke(world, tmp_path):
    """`tunepack preflight CONFIG` for a config whose job section says hf: the local smoke and the HF mask-check
    job both waited for, and the HF job's verdict in the report (it stayed "pending" after the job ended)."""
    from support.common import run_cli

    hub = world["hub"]
    done = run_cli("preflight", str(hf_twin(tmp_path, unique("e2e-preflight"))), "--json", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] and checks["hf_job_spec"]["status"] == "pass" and report["cost"]["flavor"] == "a10g-small"
    remote = report["remote_job"]["id"]
    assert hub.state.jobs[remote]["flavor"] == "cpu-basic" and hub.state.jobs[remote]["labels"]["stage"] == "preflight"
    (mask,) = markers.parse(log_of(hub, remote))["MASK"]
    assert mask["rows_checked"] > 0 and mask["windows"]["windowed"] > 0  # the real tokenizer, in the job
    assert checks["remote_mask_check"]["status"] == "pass"
    assert f"{mask['rows_checked']} rows mask-checked" in checks["remote_mask_check"]["detail"]
    assert not markers.parse(log_of(hub, remote)).get("METRIC")  # checked, not trained
    assert report["smoke_job"]["stage"] == "COMPLETED"
    outcome = markers.parse(get_backend("local").logs(report["smoke_job"]["id"]))["PREFLIGHT"][-1]
    assert outcome["ok"], outcome


def test_f_curves_go_to_the_trackio_server_the_config_names_and_no_cache_means_downloads(world, tmp_path,
                                                                                         monkeypatch):
    """tracking.server_url: the job logs to a (here: local) Trackio server itself, nothing is imported; job.cache
    none: the job downloads the weights over HTTP and installs its packages."""
    import os
    import socket
    import subprocess
    import sys

    hub = world["hub"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server_dir = tmp_path / "trackio-server"
    server = subprocess.Popen([sys.executable, "-c", "import trackio; trackio.show(open_browser=False, "
                               f"block_thread=True, host='127.0.0.1', server_port={port})"],
                              env={**os.environ, "TRACKIO_DIR": str(server_dir), "PYTHONUNBUFFERED": "1"},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        token = next(line.split("write_token=")[1].split()[0] for line in server.stdout if "write_token=" in line)
        wait_until(lambda: _listening(port), timeout=60, what="the Trackio server")
        project = unique("e2e-server")
        monkeypatch.setenv("TRACKIO_WRITE_TOKEN", token)  # goes to the job as a secret, never in the URL
        cfg = load_config(hf_twin(tmp_path, project, steps=4, save_steps=None, cache="none",
                                  tracking={"project": project, "server_url": f"http://127.0.0.1:{port}"}))
        started = start_pipeline(cfg, backend=get_backend("hf"), timeout_s=3600, flavor="a10g-small",
                                 consent=Consent.keyboard(yes=True))
        job = finished(hub, started.job.id)
        settled = settle(get_backend("hf"), get_backend("hf").status(job["id"]))["registered"]
        assert settled["trackio"]["imported_steps"] == 0 and "server" in settled["trackio"]["where"]
        wait_until(lambda: (server_dir / f"{project}.db").is_file(), timeout=30, what="the server's project file")
        import sqlite3

        with sqlite3.connect(server_dir / f"{project}.db") as db:
            steps = sorted({r[0] for r in db.execute("SELECT step FROM metrics WHERE run_name = ?",
                                                    (started.run_name,))})
        assert steps == [1, 2, 3, 4]  # train and eval logs of each step
        assert not (Path(TrackioStore().directory) / f"{project}.db").exists()  # nothing imported locally
        # no cache: no mounts, the weights downloaded once each, the packages installed
        assert not [m for m in hub.state.mounts if m["job"] == job["id"]]
        weights = [n for (repo, path), n in hub.state.downloads.items() if repo == GEMMA and path.endswith(".safetensors")]
        assert weights and all(n == 1 for n in weights)
        assert [i["installed"] for i in hub.state.installs if i["job"] == job["id"]] == [True]
        assert token not in json.dumps(hub.state.jobs[job["id"]]) and token not in log_of(hub, job["id"])
    finally:
        server.terminate()
        server.wait(timeout=30)


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_g_the_grpo_rl_check_runs_as_an_hf_job_on_the_runs_flavor(jobs_hub, tmp_path):
    """`tunepack rl-check`: the GRPO script with --rl-check, executed by the stand-in from the model and the prompt
    rows mounted at their pinned commits. The ceiling is computed in the job's sandbox and the starting model's
    groups sampled there; the random replica's groups are all flat, so the job refuses with the fix, after its
    TUNEPACK_RLCHECK line."""
    from mcp_server.pipeline.preflight import rl_check
    from mcp_server.train.tiny_model import build_tiny_model
    from support.common import write_jsonl

    rows = write_jsonl(tmp_path / "prompts.jsonl", [
        {"id": f"p{i}", "prompt": f"Write twice{i}(x).", "tests": [f"assert twice{i}(2) == 4"],
         "solution": f"def twice{i}(x):\n    return 2 * x" if i else "def twice0(x):\n    return x"} for i in range(8)])
    model_id = "Qwen/Qwen3-0.6B"
    seed_folder(jobs_hub, model_id, build_tiny_model([str(rows)], tmp_path / "qwen3", arch="qwen3", vocab_size=512))
    project = unique("e2e-rlcheck")
    path = tmp_path / "grpo.yaml"
    path.write_text(json.dumps({
        "model": {"name": model_id}, "quantization": "none", "data": {"path": str(rows)},
        "training": {"method": "grpo", "max_steps": 2, "per_device_train_batch_size": 4},
        "grpo": {"rewards": {"tests": 1.0}, "num_generations": 4, "max_completion_length": 16, "signal_prompts": 2},
        "tracking": {"project": project}, "output": {"name": project},
        "job": {"backend": "hf", "flavor": "a10g-small", "timeout_s": 3600}}))
    report = rl_check(path, flavor="a10g-small", consent=Consent.keyboard(yes=True))
    assert report.ok and report.remote_job, report.model_dump_json(indent=1)
    job = jobs_hub.wait_job(report.remote_job.id, timeout=240)
    assert job["flavor"] == "a10g-small" and job["labels"]["stage"] == "preflight"
    log = log_of(jobs_hub, report.remote_job.id)
    found = markers.parse(log)
    (rl,) = found["RLCHECK"]
    assert rl["ceiling"]["impossible"] == ["p0"] and rl["ceiling"]["problems"] == 8  # its reference is wrong
    assert rl["train_prompts"] == 7 and rl["signal"]["groups"] == 2 and rl["sandbox"]
    assert job["status"]["stage"] == "ERROR" and "mixed rewards" in found["ERROR"][-1]["problem"]
    assert not found.get("METRIC")  # checked, not trained

