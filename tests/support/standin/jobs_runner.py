"""Jobs that really run: each submitted job becomes a process group on this machine, as HF Jobs would run it.

One thread per job: the volumes are prepared (repos materialised at their revision into a folder of the
stand-in, buckets are folders of the stand-in), ``job_init.py`` builds the job's own filesystem view and
execs the command, stdout + stderr are read line by line into ``state.logs`` (timestamps in
``state.log_times``), and the stage moves SCHEDULING → RUNNING → COMPLETED / ERROR / CANCELED. Secrets
reach the job through the environment of its init process only: no file and no command line holds them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .hub_repos import files_at, materialise, resolve_revision

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SHIM_DIR, JOB_DIR = "/.standin/bin", "/.standin/job"  # where the jobs see the stand-in's folders
WORKDIR = "/"  # the uv image (python:3.12-bookworm based) sets no WORKDIR
TERMINAL = ("COMPLETED", "CANCELED", "ERROR", "DELETED")
INFRA_LOST = "the machine running the job was lost (node failure): infrastructure error, the job did not finish"
CANCEL_GRACE_S = 2.0
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def timeout_seconds(value) -> float | None:
    """``timeoutSeconds`` as sent (a number), or a string with an s/m/h/d suffix."""
    if value in (None, "", 0):
        return None
    if isinstance(value, str) and value[-1:] in UNITS:
        return float(value[:-1]) * UNITS[value[-1]]
    return float(value)


def _namespace_of(pid) -> tuple | None:
    try:
        st = os.stat(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None
    return st.st_dev, st.st_ino


class VolumeError(Exception):
    pass


@dataclass
class Run:
    job_id: str
    folder: Path
    proc: subprocess.Popen | None = None
    namespace: tuple | None = None  # (st_dev, st_ino) of the job's mount namespace: finds every process of it
    namespace_fd: int | None = None  # held open while the job is cleaned up: its inode cannot be reused meanwhile
    reason: str | None = None  # "cancel" | "timeout" | "kill" | "shutdown"
    reaped: bool = False  # its processes are gone: never signal its (reusable) process group again
    done: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


class JobRunner:
    def __init__(self, state, endpoint: str, root: Path):
        self.state, self.endpoint, self.root = state, endpoint, root
        self.runs: dict[str, Run] = {}
        self.own_namespace = _namespace_of("self")
        self.user_namespace = os.geteuid() != 0  # not root: job_init first enters a user namespace
        self.shim_dir = root / "bin"
        self._write_shims()

    def _write_shims(self) -> None:
        self.shim_dir.mkdir(parents=True, exist_ok=True)
        py = sys.executable
        scripts = {"uv": f"#!/bin/sh\nexec '{py}' -I '{HERE / 'uv_shim.py'}' \"$@\"\n",
                   "python": f"#!/bin/sh\nexec '{py}' \"$@\"\n"}
        scripts["python3"] = scripts["python"]
        for name, text in scripts.items():
            path = self.shim_dir / name
            path.write_text(text)
            path.chmod(0o755)

    # --- the API the handler and the helpers use -------------------------------------------

    def start(self, job_id: str, spec: dict, secrets: dict) -> None:
        run = Run(job_id, self.root / "jobs" / job_id)
        self.runs[job_id] = run
        run.thread = threading.Thread(target=self._run, args=(run, spec, secrets), daemon=True,
                                      name=f"standin-job-{job_id}")
        run.thread.start()

    def is_live(self, job_id: str) -> bool:
        run = self.runs.get(job_id)
        return run is not None and not run.done.is_set()

    def cancel(self, job_id: str) -> None:
        run = self.runs[job_id]
        run.reason = run.reason or "cancel"
        self._signal(run, signal.SIGTERM)
        timer = threading.Timer(CANCEL_GRACE_S, self._signal, (run, signal.SIGKILL))
        timer.daemon = True
        timer.start()

    def kill(self, job_id: str, reason: str = "kill") -> None:
        run = self.runs[job_id]
        run.reason = run.reason or reason
        self._signal(run, signal.SIGKILL)

    def shutdown(self, timeout: float = 10.0) -> None:
        for job_id in [j for j in list(self.runs) if self.is_live(j)]:
            self.kill(job_id, "shutdown")
        deadline = time.monotonic() + timeout
        for run in list(self.runs.values()):
            if run.thread is not None:
                run.thread.join(max(0.1, deadline - time.monotonic()))

    # --- one job ---------------------------------------------------------------------------

    def _run(self, run: Run, spec: dict, secrets: dict) -> None:
        try:
            self._execute(run, spec, secrets)
        except Exception as exc:  # noqa: BLE001 — the stand-in must always settle the job
            self._signal(run, signal.SIGKILL)
            self._log(run.job_id, f"stand-in error: {exc!r}")
            self._finish(run, "ERROR", f"the job could not run: {exc}")
        finally:
            run.reaped = True  # from here on nothing signals its process group or scans for its namespace
            if run.namespace_fd is not None:
                os.close(run.namespace_fd)
                run.namespace_fd = None
            run.done.set()
            with self.state.changed:
                self.state.changed.notify_all()

    def _execute(self, run: Run, spec: dict, secrets: dict) -> None:
        (run.folder / "job").mkdir(parents=True, exist_ok=True)
        (run.folder / "root").mkdir(exist_ok=True)
        (run.folder / "layers").mkdir(exist_ok=True)
        try:
            mounts = self._volumes(run, spec.get("volumes") or [])
        except VolumeError as exc:
            self._log(run.job_id, str(exc))
            return self._finish(run, "ERROR", str(exc))
        if run.reason:  # canceled or lost before it started
            return self._finish(run, *(("CANCELED", None) if run.reason == "cancel" else ("ERROR", INFRA_LOST)))
        env = self._env(spec, secrets)
        init_spec = {"command": list(spec.get("command") or []) + list(spec.get("arguments") or []),
                     "env_keys": sorted(env), "root": str(run.folder / "root"), "layers": str(run.folder / "layers"),
                     "workdir": WORKDIR, "user_namespace": self.user_namespace,
                     "binds": self._binds(), "mounts": mounts}
        spec_path = run.folder / "init.json"
        spec_path.write_text(json.dumps(init_spec))
        status_r, status_w = os.pipe()
        try:
            run.proc = subprocess.Popen(
                [sys.executable, "-I", str(HERE / "job_init.py"), str(spec_path), str(status_w)], env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                pass_fds=(status_w,), cwd="/")
        finally:
            os.close(status_w)
        if run.reason:  # canceled, killed or shut down while it was being started
            self._signal(run, signal.SIGKILL)
        self._started(run)
        reader = threading.Thread(target=self._read, args=(run,), daemon=True)
        reader.start()
        timer = self._deadline(run, timeout_seconds(spec.get("timeoutSeconds")))
        failure = self._exec_status(run, status_r)
        run.proc.wait()
        self._signal(run, signal.SIGKILL)  # the container ends with its main process
        run.reaped = True
        reader.join(10)
        if timer:
            timer.cancel()
        self._collect_installs(run)
        self._settle(run, failure, spec)

    def _exec_status(self, run: Run, status_r: int) -> str:
        """'' once execve succeeded (the close-on-exec pipe closed empty), else why the command never ran."""
        chunks = []
        with os.fdopen(status_r, "rb") as pipe:
            while chunk := pipe.read(65536):
                chunks.append(chunk)
        failure = b"".join(chunks).decode("utf-8", "replace")
        if not failure:
            try:  # the job has its namespace now; holding it open keeps its inode from being reused
                run.namespace_fd = os.open(f"/proc/{run.proc.pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
                st = os.fstat(run.namespace_fd)
                run.namespace = (st.st_dev, st.st_ino)
            except OSError:  # already gone
                pass
        if run.namespace == self.own_namespace:  # never treat the host's namespace as the job's
            run.namespace = None
        return failure

    def _settle(self, run: Run, failure: str, spec: dict) -> None:
        code = run.proc.returncode
        if run.reason == "cancel":
            return self._finish(run, "CANCELED", None)
        if failure:
            return self._finish(run, "ERROR", failure)
        if run.reason == "timeout":
            limit = timeout_seconds(spec.get("timeoutSeconds"))
            return self._finish(run, "ERROR", f"Job timed out: it ran past its timeout of {limit:g} seconds "
                                              "and was killed")
        if run.reason in ("kill", "shutdown"):
            return self._finish(run, "ERROR", INFRA_LOST)
        if code == 0:
            return self._finish(run, "COMPLETED", None)
        if code < 0:
            return self._finish(run, "ERROR", f"exit code {128 - code} (killed by signal {-code})")
        self._finish(run, "ERROR", f"exit code {code}")

    def _deadline(self, run: Run, seconds: float | None) -> threading.Timer | None:
        if not seconds:
            return None

        def expire():
            run.reason = run.reason or "timeout"
            self._signal(run, signal.SIGKILL)

        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        timer.start()
        return timer

    def _read(self, run: Run) -> None:
        for raw in iter(run.proc.stdout.readline, b""):
            self._log(run.job_id, raw.decode("utf-8", "replace").rstrip("\r\n"))
        run.proc.stdout.close()

    # --- state -----------------------------------------------------------------------------

    def _log(self, job_id: str, line: str) -> None:
        s = self.state
        with s.changed:
            s.logs.setdefault(job_id, []).append(line)
            s.log_times.setdefault(job_id, []).append(time.time())
            s.changed.notify_all()

    def _started(self, run: Run) -> None:
        with self.state.changed:
            job = self.state.jobs[run.job_id]
            if job["status"]["stage"] == "SCHEDULING":
                job["status"] = {"stage": "RUNNING", "message": None}
            job["startedAt"] = iso(time.time())
            self.state.changed.notify_all()

    def _finish(self, run: Run, stage: str, message: str | None) -> None:
        with self.state.changed:
            job = self.state.jobs[run.job_id]
            if job["status"]["stage"] not in TERMINAL:  # a cancel already answered CANCELED
                job["status"] = {"stage": stage, "message": message}
                job["finishedAt"] = iso(time.time())
            self.state.changed.notify_all()

    def _collect_installs(self, run: Run) -> None:
        path = run.folder / "job" / "installs.jsonl"
        if path.is_file():
            with self.state.lock:
                for line in path.read_text().splitlines():
                    if line.strip():
                        self.state.installs.append({"job": run.job_id, **json.loads(line)})

    # --- processes -------------------------------------------------------------------------

    def _signal(self, run: Run, sig: int) -> None:
        """Signal the job's process group and every process left in its mount namespace."""
        if run.proc is None or run.reaped:
            return
        pids = {run.proc.pid} if run.proc.poll() is None else set()
        if run.namespace:
            pids |= {int(e) for e in os.listdir("/proc") if e.isdigit() and _namespace_of(e) == run.namespace}
        try:
            os.killpg(run.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in pids - {os.getpid()}:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    # --- what the job sees -----------------------------------------------------------------

    def _env(self, spec: dict, secrets: dict) -> dict[str, str]:
        env = {"HF_ENDPOINT": self.endpoint, "PATH": f"{SHIM_DIR}:{SYSTEM_PATH}", "HOME": "/root"}
        if os.environ.get("OMP_NUM_THREADS"):  # a real job has its machine's cores; here it gets the tests' share
            env["OMP_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
        env.update({str(k): str(v) for k, v in (spec.get("environment") or {}).items()})
        env.update({str(k): str(v) for k, v in (secrets or {}).items()})
        return env

    @staticmethod
    def _binds() -> list[str]:
        """Host paths under /tmp or /root the test Python needs inside the job (CI clones under /tmp;
        pyenv lives under /root)."""
        wanted = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(REPO_ROOT), os.path.dirname(sys.executable)}
        wanted |= {p for p in sys.path if p and os.path.isdir(p)}
        inside = [p for p in wanted if p.startswith(("/tmp/", "/root/"))]
        top = [p for p in sorted(inside) if not any(p.startswith(q + "/") for q in inside if q != p)]
        return top

    def _volumes(self, run: Run, volumes: list[dict]) -> list[dict]:
        mounts = [{"source": str(self.shim_dir), "target": SHIM_DIR, "readOnly": True},
                  {"source": str(run.folder / "job"), "target": JOB_DIR, "readOnly": False}]
        for index, volume in enumerate(volumes):
            target = volume.get("mountPath") or ""
            if not target.startswith("/") or target == "/" or ".." in target.split("/"):
                raise VolumeError(f"Invalid volume mount path {target!r}: it must be an absolute path below /")
            if volume.get("type", "model") == "bucket":
                source, read_only = self._bucket(volume), bool(volume.get("readOnly"))
            else:
                source, read_only = self._repo_volume(run, index, volume), True
            mounts.append({"source": str(source), "target": target, "readOnly": read_only})
        return mounts

    def _bucket(self, volume: dict) -> Path:
        with self.state.lock:
            bucket = self.state.buckets.get(volume["source"])
        if bucket is None:
            raise VolumeError(f"Volume error: bucket {volume['source']} not found (mount {volume['mountPath']})")
        folder = Path(bucket["folder"]) / (volume.get("path") or "").strip("/")
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _repo_volume(self, run: Run, index: int, volume: dict) -> Path:
        kind, source = volume.get("type", "model"), volume["source"]
        if kind not in ("model", "dataset", "space"):
            raise VolumeError(f"Volume error: unknown volume type {kind!r} for {source}")
        revision = volume.get("revision") or "main"
        with self.state.lock:
            repo = self.state.repos.get(source)
            if repo is None or repo["type"] != kind or not repo["commits"]:
                raise VolumeError(f"Volume error: {kind} repository {source} not found (mount {volume['mountPath']})")
            oid = resolve_revision(repo, revision)
            if oid is None:
                raise VolumeError(f"Volume error: revision {revision} not found in {kind} repository {source} "
                                  f"(mount {volume['mountPath']})")
            files = dict(files_at(repo, oid))
        dest = run.folder / "volumes" / str(index)
        count = materialise(files, dest, volume.get("path") or "")  # a mount: no HTTP download is counted
        with self.state.lock:
            self.state.mounts.append({"job": run.job_id, "repo": source, "revision": oid, "files": count})
        return dest
