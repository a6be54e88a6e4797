"""The Hub + Jobs stand-in itself: jobs that really run (own filesystem view, no namespaces, timeouts, cancel,
SSE logs, volumes, the uv shim) and a Hub that stores and serves every revision — all through the real
huggingface_hub client."""

from __future__ import annotations

import base64
import ctypes.util
import importlib.metadata
import os
import secrets
import shlex
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, HfFileSystem, Volume
from huggingface_hub.errors import BucketNotFoundError, HfHubHTTPError

pytestmark = pytest.mark.timeout(120)


def _user_namespaces() -> bool:
    try:
        return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _can_isolate() -> str | None:
    if os.geteuid() != 0 and not _user_namespaces():
        return ("not root and no unprivileged user namespaces: the job stand-in cannot give each job its own "
                "mount namespace and filesystem view")
    if not ctypes.util.find_library("seccomp"):
        return "libseccomp is missing: the job stand-in cannot block namespaces inside jobs"
    return None


needs_isolation = pytest.mark.skipif(_can_isolate() is not None, reason=_can_isolate() or "")


@pytest.fixture
def api(jobs_hub):
    return HfApi(endpoint=jobs_hub.endpoint, token=jobs_hub.state.token)


def bash(api, script: str, **kwargs):
    return api.run_job(image="ghcr.io/astral-sh/uv:python3.12-bookworm", command=["bash", "-c", script], **kwargs)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_for_line(hub, job_id: str, needle: str, timeout: float = 15) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = hub.job_log(job_id)
        if any(needle in line for line in lines):
            return lines
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} never appeared in {hub.job_log(job_id)}")


# --- jobs --------------------------------------------------------------------------------------


@needs_isolation
def test_jobs_run_and_end_completed_or_error_with_their_logs(jobs_hub, api):
    ok = bash(api, "echo one; echo two >&2; echo three")
    bad = bash(api, "echo failing; exit 3")
    assert ok.status.stage == "SCHEDULING"
    done, failed = jobs_hub.wait_job(ok.id, 30), jobs_hub.wait_job(bad.id, 30)
    assert done["status"] == {"stage": "COMPLETED", "message": None} and done["startedAt"] <= done["finishedAt"]
    assert failed["status"]["stage"] == "ERROR" and "exit code 3" in failed["status"]["message"]
    assert api.inspect_job(job_id=bad.id).status.stage == "ERROR"
    assert list(api.fetch_job_logs(job_id=ok.id)) == ["one", "two", "three"] == jobs_hub.job_log(ok.id)
    assert list(api.fetch_job_logs(job_id=ok.id, tail=2)) == ["two", "three"]
    assert list(api.fetch_job_logs(job_id=bad.id, follow=True)) == ["failing"]


@needs_isolation
def test_logs_without_follow_while_running_and_with_follow_until_the_end(jobs_hub, api):
    ticking = bash(api, "for i in $(seq 1 40); do echo tick $i; sleep 0.25; done")
    wait_for_line(jobs_hub, ticking.id, "tick 2")
    started = time.monotonic()
    so_far = list(api.fetch_job_logs(job_id=ticking.id, follow=False))
    assert time.monotonic() - started < 5 and so_far[:2] == ["tick 1", "tick 2"]
    assert so_far == [f"tick {i}" for i in range(1, len(so_far) + 1)] and len(so_far) < 40
    assert api.inspect_job(job_id=ticking.id).status.stage == "RUNNING"
    api.cancel_job(job_id=ticking.id)

    jobs_hub.keepalive_s = 0.3  # the stream's keep-alive comments, sent during the silent second
    quiet = bash(api, "echo a; echo b; sleep 1.2; echo c; for i in 1 2 3; do echo d$i; done")
    wait_for_line(jobs_hub, quiet.id, "b")
    assert api.inspect_job(job_id=quiet.id).status.stage == "RUNNING"
    assert list(api.fetch_job_logs(job_id=quiet.id, follow=True, tail=1)) == ["b", "c", "d1", "d2", "d3"]
    assert jobs_hub.wait_job(quiet.id, 10)["status"]["stage"] == "COMPLETED"
    assert list(api.fetch_job_logs(job_id=quiet.id, follow=True)) == ["a", "b", "c", "d1", "d2", "d3"]

    jobs_hub.keepalive_s = 8.0  # back to the default: longer than the no-follow client's 5 s read timeout
    silent = bash(api, "echo only; sleep 20")
    wait_for_line(jobs_hub, silent.id, "only")
    started = time.monotonic()
    assert list(api.fetch_job_logs(job_id=silent.id, tail=1)) == ["only"]  # a silent job: the 5 s read timeout
    assert time.monotonic() - started < 7
    api.cancel_job(job_id=silent.id)


@needs_isolation
def test_cancel_and_timeout_kill_every_process_of_the_job(jobs_hub, api):
    job = bash(api, "sleep 300 & echo child $!; setsid sleep 300 & echo escaped $!; wait")
    lines = wait_for_line(jobs_hub, job.id, "escaped")
    pids = [int(line.split()[1]) for line in lines]
    assert all(alive(pid) for pid in pids)
    api.cancel_job(job_id=job.id)
    assert api.inspect_job(job_id=job.id).status.stage == "CANCELED"
    jobs_hub.wait_job(job.id, 10)
    assert not any(alive(pid) for pid in pids)

    slow = bash(api, "sleep 60 & echo child $!; wait", timeout="1s")
    (line,) = wait_for_line(jobs_hub, slow.id, "child")
    final = jobs_hub.wait_job(slow.id, 10)
    assert final["status"]["stage"] == "ERROR" and "timed out" in final["status"]["message"]
    assert not alive(int(line.split()[1]))
    raw = httpx.post(f"{jobs_hub.endpoint}/api/jobs/alice", headers={"authorization": f"Bearer {api.token}"},
                     json={"command": ["sleep", "30"], "arguments": [], "environment": {}, "timeoutSeconds": "1s"})
    assert "1 seconds" in jobs_hub.wait_job(raw.json()["id"], 10)["status"]["message"]  # an s/m/h/d string


@needs_isolation
def test_leaving_the_stand_in_kills_what_still_runs_and_removes_its_folder(tmp_path):
    from support.standin.hub_service import HubStandIn

    with HubStandIn() as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.state.token)
        job = bash(api, "sleep 120 & echo child $!; wait")
        (line,) = wait_for_line(hub, job.id, "child")
        root = hub.root
    assert not alive(int(line.split()[1])) and not root.exists()


@needs_isolation
def test_without_root_the_job_first_enters_a_user_namespace(jobs_hub, api):
    jobs_hub.runner.user_namespace = True  # what a non-root CI user gets
    api.create_repo("alice/userns")
    api.upload_file(path_or_fileobj=b"w", path_in_repo="w.txt", repo_id="alice/userns")
    job = bash(api, "cat /m/w.txt; echo; touch /m/x 2>/dev/null || echo read-only; echo > /tmp/t && echo tmp-ok; "
                    "unshare -m true 2>/dev/null || echo no-unshare",
               volumes=[Volume(type="model", source="alice/userns", mount_path="/m")])
    assert jobs_hub.wait_job(job.id, 20)["status"]["stage"] == "COMPLETED", jobs_hub.job_log(job.id)
    assert jobs_hub.job_log(job.id) == ["w", "read-only", "tmp-ok", "no-unshare"]


@needs_isolation
def test_kill_job_looks_like_a_lost_machine(jobs_hub, api):
    job = bash(api, "echo up; sleep 60")
    wait_for_line(jobs_hub, job.id, "up")
    jobs_hub.kill_job(job.id)
    final = jobs_hub.wait_job(job.id, 10)
    assert final["status"]["stage"] == "ERROR" and "infrastructure" in final["status"]["message"]


@needs_isolation
def test_an_argument_over_128_kib_fails_at_exec_like_a_container_runtime(jobs_hub, api):
    job = bash(api, "echo " + "x" * 140_000)
    final = jobs_hub.wait_job(job.id, 20)
    assert final["status"]["stage"] == "ERROR" and "Argument list too long" in final["status"]["message"]
    assert any("Argument list too long" in line for line in jobs_hub.job_log(job.id))


@needs_isolation
def test_concurrent_jobs_each_have_their_own_tmp_and_root(jobs_hub, api):
    existed = os.path.exists("/tmp/tunepack_job.py")
    probe = f"/usr/standin-probe-{secrets.token_hex(4)}"  # the image's folders: writable, private to the job
    jobs = {name: bash(api, f"echo {name} > /tmp/tunepack_job.py; echo {name} > ~/mine; echo {name} > {probe}; "
                            f"sleep 0.6; cat /tmp/tunepack_job.py ~/mine {probe}; ls /tmp")
            for name in ("first", "second")}
    for name, job in jobs.items():
        assert jobs_hub.wait_job(job.id, 20)["status"]["stage"] == "COMPLETED", jobs_hub.job_log(job.id)
        log = jobs_hub.job_log(job.id)  # /tmp may also hold the mount point of a checkout under /tmp (CI's clone)
        assert log[:3] == [name, name, name] and "tunepack_job.py" in log[3:], log
    assert os.path.exists("/tmp/tunepack_job.py") == existed and not Path("/root/mine").exists()
    assert not os.path.exists(probe)


@needs_isolation
def test_the_environment_is_the_jobs_own_and_secrets_stay_in_memory(jobs_hub, api, monkeypatch):
    monkeypatch.setenv("TRACKIO_DIR", "/tmp/trackio-of-the-tests")
    value = "sv_" + secrets.token_hex(12)
    job = api.run_job(image="python:3.12", command=["env"], env={"VISIBLE": "yes"}, secrets={"MY_SECRET": value})
    jobs_hub.wait_job(job.id, 20)
    env = dict(line.split("=", 1) for line in jobs_hub.job_log(job.id))
    threads = {"OMP_NUM_THREADS": os.environ["OMP_NUM_THREADS"]} if os.environ.get("OMP_NUM_THREADS") else {}
    assert env == {"HF_ENDPOINT": jobs_hub.endpoint, "HOME": "/root", "VISIBLE": "yes", "MY_SECRET": value,
                   "PATH": "/.standin/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   **threads}  # the tests' thread share only: a real job has its own machine's cores
    assert os.environ["HF_TOKEN"] and "HF_TOKEN" not in env and "TRACKIO_DIR" not in env
    assert api.inspect_job(job_id=job.id).secrets == {"MY_SECRET": "<encrypted>"}
    with_token = api.run_job(image="python:3.12", command=["env"], secrets={"HF_TOKEN": jobs_hub.state.token})
    jobs_hub.wait_job(with_token.id, 20)
    assert f"HF_TOKEN={jobs_hub.state.token}" in jobs_hub.job_log(with_token.id)
    written = [p for p in jobs_hub.root.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]
    assert written == []


@needs_isolation
def test_a_job_cannot_create_namespaces_but_forks_threads_and_subprocesses(jobs_hub, api):
    probe = ("import os, subprocess, threading, multiprocessing\n"
             "pid = os.fork()\n"
             "if pid == 0: os._exit(7)\n"
             "print('fork', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
             "print('subprocess', subprocess.run(['echo', 'hi'], capture_output=True, text=True).stdout.strip())\n"
             "t = threading.Thread(target=lambda: print('thread ok')); t.start(); t.join()\n"
             "with multiprocessing.Pool(2) as pool: print('pool', sum(pool.map(abs, [-1, -2, 3])))\n"
             "try:\n    os.unshare(0)\nexcept AttributeError:\n    pass\n")
    job = bash(api, f"unshare -m true; echo unshare=$?; python -c {shlex.quote(probe)}; "
                    "grep Seccomp: /proc/self/status")
    assert jobs_hub.wait_job(job.id, 30)["status"]["stage"] == "COMPLETED", jobs_hub.job_log(job.id)
    log = jobs_hub.job_log(job.id)
    assert any("Operation not permitted" in line for line in log) and "unshare=1" in log
    assert {"fork 7", "subprocess hi", "thread ok", "pool 6"} <= set(log)
    assert any(line.split() == ["Seccomp:", "2"] for line in log)


@needs_isolation
def test_volumes_a_repo_at_an_older_revision_read_only_and_a_bucket_that_persists(jobs_hub, api):
    api.create_repo("alice/vol-model")
    first = api.upload_file(path_or_fileobj=b"v1", path_in_repo="weights.txt", repo_id="alice/vol-model").oid
    api.upload_file(path_or_fileobj=b"v2", path_in_repo="weights.txt", repo_id="alice/vol-model")
    api.upload_file(path_or_fileobj=b"new", path_in_repo="later.txt", repo_id="alice/vol-model")
    api.create_bucket("alice/scratch", private=True)
    model = Volume(type="model", source="alice/vol-model", mount_path="/tunepack/model", revision=first)
    bucket = Volume(type="bucket", source="alice/scratch", mount_path="/scratch")
    job = bash(api, "cat /tunepack/model/weights.txt; echo; ls /tunepack/model; "
                    "touch /tunepack/model/x || echo read-only; echo kept > /scratch/note", volumes=[model, bucket])
    assert jobs_hub.wait_job(job.id, 20)["status"]["stage"] == "COMPLETED", jobs_hub.job_log(job.id)
    log = jobs_hub.job_log(job.id)
    assert log[:2] == ["v1", "weights.txt"] and "read-only" in log and any("Read-only file system" in x for x in log)
    assert jobs_hub.state.mounts == [{"job": job.id, "repo": "alice/vol-model", "revision": first, "files": 1}]
    assert api.inspect_job(job_id=job.id).volumes[0].mount_path == "/tunepack/model"
    again = bash(api, "cat /scratch/note", volumes=[bucket])
    jobs_hub.wait_job(again.id, 20)
    assert jobs_hub.job_log(again.id) == ["kept"]
    info = api.bucket_info("alice/scratch")
    assert info.private and info.total_files == 1 and jobs_hub.state.buckets["alice/scratch"]["private"] is True
    assert api.create_bucket("alice/scratch", exist_ok=True).bucket_id == "alice/scratch"
    with pytest.raises(HfHubHTTPError) as taken:
        api.create_bucket("alice/scratch")
    assert taken.value.response.status_code == 409
    with pytest.raises(BucketNotFoundError):
        api.bucket_info("alice/no-such-bucket")
    missing = bash(api, "true", volumes=[Volume(type="dataset", source="alice/nope", mount_path="/data")])
    final = jobs_hub.wait_job(missing.id, 20)
    assert final["status"]["stage"] == "ERROR" and "alice/nope" in final["status"]["message"]


def _uv_job(api, script: str, **kwargs):
    packed = base64.b64encode(script.encode()).decode()
    return bash(api, f"echo {packed} | base64 -d > /tmp/s.py && uv run /tmp/s.py a 'b c'", **kwargs)


@needs_isolation
def test_the_uv_shim_checks_pins_and_emulates_its_cache(jobs_hub, api):
    installed = importlib.metadata.version("huggingface_hub")
    good = ("# /// script\n# requires-python = \">=3.10\"\n"
            f"# dependencies = [\"huggingface_hub=={installed}\", \"packaging\"]\n# ///\n"
            "import sys, huggingface_hub\nprint('hub', huggingface_hub.__version__, sys.argv[1:])\n")
    api.create_bucket("alice/uv-cache")
    cache = dict(volumes=[Volume(type="bucket", source="alice/uv-cache", mount_path="/uv-cache")],
                 env={"UV_CACHE_DIR": "/uv-cache"})
    ids = []
    for _ in range(2):
        job = _uv_job(api, good, **cache)
        assert jobs_hub.wait_job(job.id, 30)["status"]["stage"] == "COMPLETED", jobs_hub.job_log(job.id)
        assert f"hub {installed} ['a', 'b c']" in jobs_hub.job_log(job.id)
        ids.append(job.id)
    assert jobs_hub.state.installs == [{"job": ids[0], "installed": True, "packages": 2},
                                       {"job": ids[1], "installed": False, "packages": 2}]
    assert "Installed 2 packages in 12ms" in jobs_hub.job_log(ids[0])
    assert any(line.startswith("Audited 2 packages") for line in jobs_hub.job_log(ids[1]))

    pinned = good.replace(f"=={installed}", "==0.0.1")
    bad = _uv_job(api, pinned)
    final = jobs_hub.wait_job(bad.id, 30)
    assert final["status"]["stage"] == "ERROR" and "exit code 2" in final["status"]["message"]
    assert any("huggingface-hub==0.0.1" in line and f"huggingface-hub=={installed}" in line
               for line in jobs_hub.job_log(bad.id))
    for broken, needle in [(good.replace('">=3.10"', '">=4"'), "No interpreter found for Python >=4"),
                           (good.replace("# ///\nimport", "# [oops\n# ///\nimport"), "TOML parse error"),
                           (good.replace("packaging", "no-such-package-xyz"), "no-such-package-xyz was not found")]:
        job = _uv_job(api, broken)
        assert jobs_hub.wait_job(job.id, 30)["status"]["message"] == "exit code 2"
        assert any(needle in line for line in jobs_hub.job_log(job.id)), jobs_hub.job_log(job.id)
    assert len(jobs_hub.state.installs) == 2


# --- the Hub -----------------------------------------------------------------------------------


@pytest.fixture
def hub_client(jobs_hub, monkeypatch, tmp_path):
    """huggingface_hub's module-level defaults pointed at the stand-in (they are read at import)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", jobs_hub.endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                        jobs_hub.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    return HfApi(endpoint=jobs_hub.endpoint, token=jobs_hub.state.token)


def _two_commits(api, repo_id: str, repo_type: str = "model") -> str:
    api.create_repo(repo_id, repo_type=repo_type, private=True)
    first = api.create_commit(repo_id, repo_type=repo_type, commit_message="first", operations=[
        CommitOperationAdd("data/train.jsonl", b'{"text": "old"}\n'),
        CommitOperationAdd("notes/a.txt", b"a"), CommitOperationAdd("notes/b.txt", b"b"),
        CommitOperationAdd("README.md", b"# v1\n")]).oid
    api.create_commit(repo_id, repo_type=repo_type, commit_message="second", operations=[
        CommitOperationAdd("data/train.jsonl", b'{"text": "new"}\n{"text": "newer"}\n'),
        CommitOperationDelete("README.md"), CommitOperationDelete("notes/")])
    return first


def test_the_hub_serves_every_revision_and_counts_downloads(jobs_hub, hub_client, tmp_path):
    from huggingface_hub import hf_hub_download, snapshot_download

    api, repo = hub_client, "alice/revisions"
    first = _two_commits(api, repo)
    commits = jobs_hub.state.repos[repo]["commits"]
    assert commits[0] == first and len(commits) == 2
    assert api.model_info(repo, revision=first).sha == first and api.model_info(repo).sha == commits[1]
    assert sorted(f.rfilename for f in api.model_info(repo, revision=first).siblings) == [
        "README.md", "data/train.jsonl", "notes/a.txt", "notes/b.txt"]
    assert sorted(api.list_repo_files(repo)) == ["data/train.jsonl"]
    top = {e.path: type(e).__name__ for e in api.list_repo_tree(repo, revision=first)}
    assert top == {"data": "RepoFolder", "notes": "RepoFolder", "README.md": "RepoFile"}
    entries = list(api.list_repo_tree(repo, path_in_repo="notes", revision=first, expand=True))
    assert [e.path for e in entries] == ["notes/a.txt", "notes/b.txt"]
    assert entries[0].last_commit.oid == first and entries[0].last_commit.title == "first"
    assert {e.path for e in api.list_repo_tree(repo, recursive=True)} == {"data", "data/train.jsonl"}

    old = Path(snapshot_download(repo, revision=first, cache_dir=tmp_path / "c", token=jobs_hub.state.token))
    assert (old / "README.md").read_text() == "# v1\n" and (old / "notes" / "b.txt").read_text() == "b"
    new = Path(snapshot_download(repo, cache_dir=tmp_path / "c", token=jobs_hub.state.token))
    assert sorted(p.name for p in new.rglob("*") if p.is_file()) == ["train.jsonl"]
    path = hf_hub_download(repo, "data/train.jsonl", revision=first, cache_dir=tmp_path / "d",
                           token=jobs_hub.state.token)
    assert Path(path).read_text() == '{"text": "old"}\n'
    downloads = jobs_hub.state.downloads  # GETs of the bytes; hf_hub_download's HEAD does not count
    assert downloads[(repo, "data/train.jsonl")] == 3 and downloads[(repo, "README.md")] == 1

    fs = HfFileSystem(endpoint=jobs_hub.endpoint, token=jobs_hub.state.token, skip_instance_cache=True)
    assert sorted(fs.ls(f"{repo}@{first}/notes", detail=False)) == [f"{repo}@{first}/notes/a.txt",
                                                                   f"{repo}@{first}/notes/b.txt"]
    assert fs.cat(f"{repo}@{first}/README.md") == b"# v1\n" and not fs.exists(f"{repo}/README.md")
    assert fs.info(f"{repo}/data/train.jsonl")["size"] == 34


def test_datasets_load_a_dataset_at_a_revision(jobs_hub, hub_client, monkeypatch, tmp_path):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_ENDPOINT", jobs_hub.endpoint, raising=False)
    monkeypatch.setenv("HF_TOKEN", jobs_hub.state.token)
    first = _two_commits(hub_client, "alice/rows", repo_type="dataset")
    load = dict(data_files="data/*.jsonl", split="train", cache_dir=str(tmp_path / "datasets"))
    old = datasets.load_dataset("alice/rows", revision=first, **load)
    new = datasets.load_dataset("alice/rows", **load)
    assert old["text"] == ["old"] and new["text"] == ["new", "newer"]
    assert jobs_hub.state.downloads[("alice/rows", "data/train.jsonl")] == 2  # one per revision


def test_a_trainer_pushes_its_checkpoints_to_the_hub(jobs_hub, hub_client, tmp_path, monkeypatch):
    import torch
    import transformers.utils.hub
    from huggingface_hub import snapshot_download
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    monkeypatch.setenv("HF_TOKEN", jobs_hub.state.token)
    monkeypatch.setattr(transformers.utils.hub, "_hf_api", None)  # its shared HfApi keeps the endpoint it saw first
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32))
    rows = [{"input_ids": torch.randint(0, 64, (8,)), "labels": torch.randint(0, 64, (8,))} for _ in range(8)]
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=4, save_steps=2, per_device_train_batch_size=2,
                             push_to_hub=True, hub_model_id="alice/tiny-ckpt", hub_strategy="checkpoint",
                             hub_always_push=True,  # else a save during a push skips its own push
                             hub_token=jobs_hub.state.token, hub_private_repo=True, report_to=[], use_cpu=True,
                             logging_steps=1, save_total_limit=1, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=rows)
    trainer.train()  # waits for its background pushes
    repo = jobs_hub.state.repos["alice/tiny-ckpt"]
    assert "last-checkpoint/trainer_state.json" in repo["files"] and len(repo["commits"]) >= 2
    got = Path(snapshot_download("alice/tiny-ckpt", allow_patterns=["last-checkpoint/*"], cache_dir=tmp_path / "c",
                                 token=jobs_hub.state.token))
    state = (got / "last-checkpoint" / "trainer_state.json").read_text()
    assert '"global_step": 4' in state
