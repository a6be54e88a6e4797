"""kill -9 at the worst moments, and a full disk: after a restart every job shows its true end with its log,
every skill validates, no sweep run is submitted twice, the registry never shows a half-written version, and
a write onto a full disk is one clear DiskFullError that leaves the store readable.

Random kill moments come from a seeded generator (the seed is in the assertion messages)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from crash_support import HERE, Zygote, fake_adapter
from mcp import Client
from support.common import REPO, short_conversation, write_jsonl
from support.sweeps import hub_base, unique
from test_server import _server_pids, ok, params, session
from test_sweeps_controller import finished

from mcp_server.approval import Consent
from mcp_server.jobs import get_backend
from mcp_server.pipeline import start_pipeline
from mcp_server.registry import LocalRegistry
from mcp_server.skills import list_pitfalls, list_skills
from mcp_server.skills.journal import pending
from mcp_server.skills.validate import check_skill
from mcp_server.sweeps import read_state, submit_sweep, sweep_dir

SEED = int(os.environ.get("TUNEPACK_CRASH_SEED") or random.SystemRandom().randrange(10**6))
FINAL = ("COMPLETED", "ERROR", "CANCELED")


def _wait_for_line(path: str, needle: str, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if needle in Path(path).read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"'{needle}' never appeared in {path}: {Path(path).read_text()[-2000:]}")


@pytest.fixture(scope="module", autouse=True)
def training_run(short_data, tmp_path_factory):
    """(d)'s training run (tiny Qwen3, 20 steps, 128 tokens) is started before this module's first test, so the
    time it needs to boot (the tiny model's build when no earlier test made it, the torch import) overlaps the
    other tests; a thread kills it -9 at its first logged step, the last test checks what a restart shows.
    Canceled at the end if a failure left it running."""
    name = unique("killed-train")
    cfg = tmp_path_factory.mktemp("killed-train") / "train.yaml"
    cfg.write_text(json.dumps({
        "model": {"name": "tiny:qwen3"}, "data": {"path": str(short_data)},
        "training": {"max_length": 128, "max_steps": 20, "logging_steps": 1, "gradient_checkpointing": False},
        "tracking": {"project": name}, "output": {"name": name}}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNEPACK_LOCAL_MAX_JOBS", "4")
        job = start_pipeline(cfg).job
    killer = threading.Thread(target=_kill_once_training, args=(job.id,), daemon=True)
    killer.start()
    yield name, job, killer
    get_backend("local").cancel(job.id)


def _kill_once_training(job_id: str) -> None:
    """SIGKILL the job's process group (the pipeline job and its training script) at its first logged step."""
    local = get_backend("local")
    _wait_for_line(local.status(job_id).log_path, "TUNEPACK_METRIC", timeout=240)
    os.killpg(local.store.get(job_id)["child_pid"], signal.SIGKILL)


def test_pitfall_writer_killed_at_random_moments(tmp_path, monkeypatch):
    """(b) a process appending pitfalls is killed -9 at 10 random moments. After each restart (the next skills
    call) the skill validates and every pitfall the writer reported as written is there."""
    rng = random.Random(SEED)
    root = tmp_path / "skills"
    shutil.copytree(REPO / "skills" / "tunepack-trackio", root / "tunepack-trackio")
    monkeypatch.setenv("TUNEPACK_SKILLS_DIR", str(root))
    writer, acknowledged, interrupted = Zygote("pitfalls", "tunepack-trackio"), [], 0
    for kill in range(40):  # at least 10 kills, more until 3 of them landed inside a write (a fast, quiet machine)
        if kill >= 10 and interrupted >= 3:
            break
        acknowledged += writer.cycle(rng, 0.02, 0.3)
        interrupted += pending(root / "tunepack-trackio")  # killed mid-write: temp files or a journal left
        list_skills()  # a restarted server's first skills call
        problems = check_skill(root / "tunepack-trackio")
        assert problems == [], f"seed {SEED}, kill {kill}: {problems}"
        ids = [p.id for p in list_pitfalls("tunepack-trackio")]
        assert len(ids) == len(set(ids)) and set(acknowledged) <= set(ids), f"seed {SEED}, kill {kill}"
    assert "Traceback" not in writer.close()
    assert len(acknowledged) >= 10 and interrupted >= 3  # it wrote between the kills; some kills hit a write


def test_registry_push_killed_mid_copy(tmp_path):
    """(e) a process pushing a 6 MB adapter in a loop is killed -9 at 10 random moments: every version the
    registry lists is whole (adapter, manifest, card, registry.json), every reported version is there, and the
    next push clears the staging folders the killed ones left."""
    rng = random.Random(SEED + 1)
    root, adapter = tmp_path / "registry", fake_adapter(tmp_path / "adapter", 6)
    size = (adapter / "adapter_model.safetensors").stat().st_size
    pusher, acknowledged, interrupted = Zygote("registry", str(root), str(adapter), "crashy"), set(), 0
    for kill in range(10):
        acknowledged |= {int(v) for v in pusher.cycle(rng, 0.01, 0.15)}
        interrupted += any((root / "crashy").glob(f".staging-{pusher.last_pid}-*"))  # killed mid-copy
        versions = LocalRegistry(root).list("crashy")
        assert {v.version for v in versions} >= acknowledged, f"seed {SEED}, kill {kill}"
        folders = [p for p in (root / "crashy").iterdir() if p.name.startswith("v")]
        assert len(folders) == len(versions), f"seed {SEED}: a version folder without registry.json"
        for v in versions:
            folder = Path(v.path)
            for file in ("adapter_config.json", "tunepack_manifest.json", "README.md", "registry.json",
                         "tokenizer.json"):
                assert (folder / file).is_file(), (v.version, file)
            assert (folder / "adapter_model.safetensors").stat().st_size == size, f"seed {SEED}: v{v.version}"
    assert "Traceback" not in pusher.close() and acknowledged and interrupted >= 5
    LocalRegistry(root).push(adapter, "crashy", card="# after the crashes\n")  # the restart
    assert list((root / "crashy").glob(".staging-*")) == []


def _complete_sweep_jobs(hub, configs: dict, sweep_id: str, stop: threading.Event) -> None:
    """The stand-in's jobs finish as soon as they are submitted (a remote run that pushed its adapter)."""
    while not stop.is_set():
        for job_id, job in list(hub.state.jobs.items()):
            if job["status"]["stage"] == "SCHEDULING" and (job.get("labels") or {}).get("sweep") == sweep_id:
                run = job["labels"]["sweep_run"]
                hub.state.logs[job_id] = finished(configs[run], f"{sweep_id}-{run}", [2.0, 1.0 + int(run[1:]) / 10])
                hub.set_stage(job_id, "COMPLETED")
        time.sleep(0.02)


def test_sweep_controller_killed_between_submits(hub, tmp_path):
    """(c) an HF sweep of 4 runs, 2 at a time (Jobs stand-in, jobs finish at once) whose controller is killed -9
    at random moments and started again until the sweep ends: each run was submitted exactly once and recorded
    once in the registry."""
    rng = random.Random(SEED + 2)
    project = unique("sweep-kill")
    data = write_jsonl(tmp_path / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
    spec = {"name": "kill", "base": hub_base(data, project), "backend": "hf", "flavor": "t4-small",
            "timeout_s": 3600, "budget_usd": 5, "max_concurrent": 2, "canary": {"enabled": False}, "retries": 1,
            "metric": {"name": "loss"}, "grid": {"training.learning_rate": [1e-4, 2e-4, 3e-4, 4e-4]}}
    quote = submit_sweep(spec, start=False)
    sweep = submit_sweep(spec, consent=Consent(token=quote.decision.approval_token), start=False)
    folder = sweep_dir(sweep.sweep_id)
    configs = json.loads((folder / "plan.json").read_text())["configs"]
    hub.state.repos[f"alice/{project}"] = {"type": "model", "private": True, "files": {}, "commits": ["c0"]}
    stop = threading.Event()
    completer = threading.Thread(target=_complete_sweep_jobs, args=(hub, configs, sweep.sweep_id, stop), daemon=True)
    completer.start()
    controller, kills, unrecorded = Zygote("sweep", str(folder)), 0, 0
    try:
        while kills < 40 and read_state(folder).status != "done":
            controller.cycle(rng, 0.05, 0.8 + kills * 0.1)  # the window widens: a loaded machine still finishes
            kills += 1
            on_hub = sum((j.get("labels") or {}).get("sweep") == sweep.sweep_id for j in list(hub.state.jobs.values()))
            unrecorded += on_hub > sum(len(r.jobs) for r in read_state(folder).runs)  # killed after a submit
    finally:
        stop.set()
        completer.join()
        controller.close()
    state = read_state(folder)
    assert state.status == "done", f"seed {SEED}: {state.status} after {kills} kills"
    submitted: dict[str, int] = {}
    for job in hub.state.jobs.values():
        if (job.get("labels") or {}).get("sweep") == sweep.sweep_id:
            submitted[job["labels"]["sweep_run"]] = submitted.get(job["labels"]["sweep_run"], 0) + 1
    assert submitted == {r.id: 1 for r in state.runs}, f"seed {SEED}, {kills} kills: {submitted}"
    assert all(r.status == "completed" and len(r.jobs) == 1 for r in state.runs)
    versions = LocalRegistry().list(project)
    assert sorted(v.job_id for v in versions) == sorted(r.job_id for r in state.runs), f"seed {SEED}"
    assert kills >= 2, f"{kills} kills, {unrecorded} right after a submit the state had not recorded yet"


def _starved_run(tmp_path: Path, mode: str) -> dict:
    work, outside = tmp_path / "small-disk", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    env = dict(os.environ, TUNEPACK_HOME=str(work / "home"), TRACKIO_DIR=str(work / "trackio"),
               TUNEPACK_SKILLS_DIR=str(work / "skills"), PYTHONPATH=str(REPO))
    child = [sys.executable, str(HERE / "crash_support.py"), "diskfull", str(work), mode, str(outside)]
    if mode == "tmpfs":
        mount = f"mount -t tmpfs -o size=8m tunepack-full {work} && exec \"$@\""
        child = ["unshare", "-rm", "sh", "-c", mount, "sh", *child]
    done = subprocess.run(child, env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _tmpfs_allowed() -> bool:
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k probe /mnt"],
                           capture_output=True) if shutil.which("unshare") else None
    return probe is not None and probe.returncode == 0


@pytest.mark.parametrize("mode", ["tmpfs", "rlimit"])
def test_a_full_disk_is_one_clear_error(tmp_path, mode):
    """A full disk under the tunepack home: a job submit, a ledger proposal, a pitfall and a registry push each
    fail with one DiskFullError naming the folder and the fix, and every store reads as before.

    How the disk fills: ``tmpfs`` mounts an 8 MB tmpfs over the home inside ``unshare -rm`` (a user + mount
    namespace; it needs unprivileged user namespaces, else it is skipped with that reason); ``rlimit`` runs on
    every machine: RLIMIT_FSIZE = 0 makes every write fail (EFBIG, or SQLite's I/O error) as a full disk would."""
    if mode == "tmpfs" and not _tmpfs_allowed():
        pytest.skip("this machine forbids unprivileged user namespaces (unshare -rm); the rlimit case ran instead")
    report = _starved_run(tmp_path, mode)
    for store, outcome in report["outcomes"].items():
        assert outcome["raised"] == "DiskFullError" and outcome["tunepack"], (mode, store, outcome)
        assert "no room left" in outcome["problem"] and "free space in" in outcome["fix"], (store, outcome)
        assert ("TUNEPACK_SKILLS_DIR" if store == "pitfall" else "TUNEPACK_HOME") in outcome["fix"]
    before = report["before"]
    assert report["while_full"] == before == {**before, "skill": []}  # readable, unchanged, nothing half-written
    assert report["after_free"] == {"ledger": {"raised": None}, "registry": {"raised": None}}
    assert report["stores_after"]["registry"] == [1, 2] and report["stores_after"]["staging"] == []


@pytest.mark.slow
def test_server_and_training_job_killed_mid_run(tmp_path, training_run, monkeypatch):
    """(a) the MCP server is killed -9 while three local jobs run; (d) a training job is killed -9 mid-run.
    A new server reports each job's true end and its log; the killed training left nothing in the registry."""
    monkeypatch.setenv("TUNEPACK_LOCAL_MAX_JOBS", "4")  # the training job and the three others run at once
    name, training, killer = training_run
    jobs = {"A": ("print('A start', flush=True)\nimport time; time.sleep(4)\nprint('A done')\n", "COMPLETED", 0),
            "B": ("print('B start', flush=True)\nimport time, sys; time.sleep(4)\nsys.exit(3)\n", "ERROR", 3),
            "C": ("print('C start', flush=True)\nimport time; time.sleep(3)\nraise RuntimeError('C broke')\n",
                  "ERROR", 1)}
    marker = str(30000 + os.getpid() % 20000)

    async def submit_then_kill():
        ids = {}
        try:
            async with Client(params("--port", marker), mode="legacy") as client:
                for key, (body, _, _) in jobs.items():
                    script = tmp_path / f"{key}.py"
                    script.write_text(body)
                    ids[key] = ok(await client.call_tool("jobs_submit", {"script_path": str(script)}))["job"]["id"]
                local, deadline = get_backend("local"), time.time() + 30
                while time.time() < deadline and not all(local.status(i).stage == "RUNNING" for i in ids.values()):
                    await anyio.sleep(0.1)
                at_kill.extend(local.status(i).stage for i in ids.values())
                for pid in _server_pids(marker):
                    os.kill(pid, signal.SIGKILL)
                await anyio.sleep(0.3)
                await client.call_tool("jobs_status", {"job_id": ids["A"]})
        except Exception:
            pass  # the server is gone
        return ids

    at_kill: list[str] = []
    ids = anyio.run(submit_then_kill)
    assert len(ids) == 3 and at_kill == ["RUNNING"] * 3 and _server_pids(marker) == []

    killer.join(timeout=240)  # the training job is killed at its first logged step
    assert not killer.is_alive()

    async def after_restart(client):
        views, logs = {}, {}
        for key, job_id in [*ids.items(), ("train", training.id)]:
            for _ in range(10):
                result = await client.call_tool("jobs_wait", {"job_id": job_id, "timeout_s": 10})
                view = result.structured_content  # a job that ended in ERROR answers isError, its view kept
                assert result.is_error == (view["job"]["stage"] in ("ERROR", "CANCELED")), result.content[0].text
                if view["job"]["stage"] in FINAL:
                    break
            views[key] = view
            logs[key] = "\n".join(ok(await client.call_tool("jobs_logs", {"job_id": job_id, "tail": 200}))["lines"])
        return views, logs

    views, logs = session(after_restart)
    for key, (_, stage, code) in jobs.items():
        job = views[key]["job"]
        assert (job["stage"], job["exit_code"]) == (stage, code), (key, job)
        assert f"{key} start" in logs[key]
    assert "A done" in logs["A"] and "RuntimeError: C broke" in logs["C"]
    assert "exit code 3" in views["B"]["error"]
    train = views["train"]
    assert train["job"]["stage"] == "ERROR" and train["job"]["exit_code"] == -9, train
    assert "TUNEPACK_METRIC" in logs["train"] and 1 <= train["progress"]["step"] < 20
    assert "killed by SIGKILL" in train["error"], train["error"]
    assert LocalRegistry().list(name) == []  # nothing half-trained was registered
    assert not (LocalRegistry().root / name).exists() or not any((LocalRegistry().root / name).iterdir())

