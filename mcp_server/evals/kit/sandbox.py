"""Run untrusted Python programs (model-generated code and its tests) in isolation.

    with Sandbox("confined", workers=2) as box:
        result = box.run("assert 1 + 1 == 2")          # ExecResult(status="passed", ...): a whole program
        results = box.run_many([prog1, prog2, ...])     # in parallel, one zygote per worker
        result = box.run_trial(payload, nonce)          # an answer + its tests; judge it with verdict.judge

Modes:
- ``namespaces`` (default): per program a new mount/network/PID namespace, a read-only root with
  only library folders, a fresh size-capped /work as cwd and HOME, pids + memory cgroup (v1)
  limits, rlimits, an empty environment and uid 65534; everything killed at the end. Needs Linux,
  root (or CAP_SYS_ADMIN) and cgroup v1 ``pids`` + ``memory``; otherwise ``start`` refuses.
- ``confined``: for machines that cannot make namespaces (HF Jobs containers). Per program a uid of
  the worker's own, an empty environment, a fresh work folder, a Landlock ruleset (read the system
  and Python library folders, write the work folder), a seccomp filter (no sockets, ptrace,
  process_vm_*, namespaces or mounts), rlimits (CPU, AS, NPROC, FSIZE, NOFILE, CORE), its own
  session; every process of the uid killed at the end. Needs root (to switch uids), Landlock and
  seccomp; ``start`` refuses with the reason when one is missing. No memory cgroup: memory is
  bounded per process (RLIMIT_AS) times the process cap (RLIMIT_NPROC).
- ``auto``: namespaces where they start, else confined; ``mode`` then names the one in use.
- ``unsafe-host``: a forked process with a temporary cwd, rlimits and an empty environment, as the
  user running tunepack (root in a job), with no namespaces, uid or filters: it can read that user's
  secrets and forge its reply. Only when explicitly chosen; results are labelled so.
The work happens in ``sandbox_child.py`` (stdlib only), started with an environment holding only
PATH so that no token is ever in the memory the programs fork from.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import confine
from .errors import KitError

CHILD = Path(__file__).with_name("sandbox_child.py")
SAFE_MODES = ("namespaces", "confined")
MODES = ("namespaces", "confined", "auto", "unsafe-host")
CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"
FIXES = {
    "namespaces": "run evaluations as root on Linux with cgroup v1 pids+memory mounted (as on the CI machines), "
                  "or use eval.sandbox: confined where namespaces are not allowed (HF Jobs containers)",
    "confined": "run the evaluation as root on a Linux kernel with Landlock and seccomp (`tunepack eval "
                "sandbox-check` and the preflight job say what a machine offers), or use eval.sandbox: namespaces "
                "or docker",
}
UNSAFE = ("eval.sandbox: unsafe-host runs generated code without isolation, as the user running the eval (in a "
          "job, root: it can read the job's token, reach the network and forge results); choose it only knowingly, "
          "results are labelled")


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    memory_mb: int = 512
    max_pids: int = 32
    output_bytes: int = 16384
    work_mb: int = 64


@dataclass
class ExecResult:
    status: str  # passed | failed | timeout | oom | killed | sandbox_error
    exit_code: int | None
    output: str
    duration_s: float
    peak_pids: int | None = None
    oom: bool = False
    output_truncated: bool = False
    channel: str = ""  # a trial's result line, from its own pipe
    channel_truncated: bool = False

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class _Worker:
    def __init__(self, mode: str, view: dict[str, str] | None = None):
        self.proc: subprocess.Popen[str] | None
        try:
            self.proc = proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(CHILD), mode, json.dumps(view or {})],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={"PATH": CHILD_PATH}, cwd="/", close_fds=True, text=True, bufsize=1,
            )
            assert proc.stdout is not None, "stdout=PIPE"
            ready = json.loads(proc.stdout.readline() or '{"ready": false, "error": "the sandbox process exited"}')
        except OSError as exc:
            self.proc, ready = None, {"ready": False, "error": repr(exc)}
        if not ready.get("ready"):
            self.close()
            raise KitError(f"The '{mode}' sandbox cannot start here: {ready.get('error')}.",
                           FIXES.get(mode, "") + f"; {UNSAFE}.")
        self.ready = ready

    def request(self, payload: dict) -> dict:
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None, \
            "a worker that started has its process, with stdin and stdout piped"
        proc.stdin.write(json.dumps(payload) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise KitError("The sandbox process died while running a program.", "retry; if it repeats, report it.")
        return json.loads(line)

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)  # it kills its uid's processes first (confine.kill_uid waits up to 15 s)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait()


class Sandbox:
    """A pool of sandbox zygotes; ``run`` is thread-safe."""

    def __init__(self, mode: str = "namespaces", workers: int | None = None, limits: Limits | None = None):
        if mode not in MODES:
            raise KitError(f"Unknown sandbox mode '{mode}'.", f"use one of: {', '.join(MODES)}.")
        if mode == "unsafe-host" and os.environ.get("TUNEPACK_CUSTODIAN") == "1":
            raise KitError("unsafe-host would run generated code, tests and reward files as the custodian account, "
                           "which holds the token, the budget and the quotes (custodian mode).",
                           "use sandbox auto (isolated), or run it on HF Jobs or under the agent's own account.")
        if not sys.platform.startswith("linux"):
            raise KitError(
                f"The sandbox needs Linux (this is {sys.platform}).",
                "run the evaluation as a job on Linux (local Linux machine or HF Jobs).",
            )
        self.requested = self.mode = mode  # mode: the one in use ("auto" resolves at start)
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.limits = limits or Limits()
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._view: dict[str, str] | None = None
        self._view_dir: str | None = None

    @property
    def isolated(self) -> bool:
        return self.mode in SAFE_MODES

    def start(self) -> "Sandbox":
        try:
            with self._lock:
                if self.mode == "auto":
                    self.mode = self._resolve_auto()
                while len(self._all) < self.workers:
                    self._add(self._new_worker())
        except KitError:
            self.close()  # the workers that did start, and the library view
            raise
        return self

    def _add(self, worker: _Worker) -> None:
        self._all.append(worker)
        self._idle.put(worker)

    def _new_worker(self) -> _Worker:
        if self.mode == "confined" and self._view is None:
            try:
                self._view_dir = tempfile.mkdtemp(prefix="tunepack-pyview-", dir=confine.shared_tmp())
            except OSError as exc:
                raise KitError(f"The 'confined' sandbox cannot start here: {exc}.", FIXES["confined"] + ".") from exc
            self._view = confine.python_view(_import_dirs(), self._view_dir)
        return _Worker(self.mode, self._view)

    def _resolve_auto(self) -> str:
        """namespaces when a zygote starts with them, else confined; both refusals named when neither does."""
        try:
            self._add(_Worker("namespaces"))
            return "namespaces"
        except KitError as first:
            self.mode = "confined"
            try:
                self._add(self._new_worker())
            except KitError as second:
                self.mode = "auto"
                raise KitError(f"Neither isolating sandbox can start here. namespaces: {first.problem} "
                               f"confined: {second.problem}", f"{FIXES['confined']}; {UNSAFE}.") from second
            return "confined"

    def run(self, code: str, limits: Limits | None = None) -> ExecResult:
        """Run a whole program; its status is "passed" when it exits 0 (no proof of anything else)."""
        return self._request({"code": code}, limits)

    def run_trial(self, payload: dict, nonce: str, limits: Limits | None = None) -> ExecResult:
        """Run an answer and its tests (``verdict.trial_for(...).payload``); judge it with ``verdict.judge``."""
        return self._request({"trial": payload, "nonce": nonce}, limits)

    def _request(self, body: dict, limits: Limits | None) -> ExecResult:
        if not self._all:
            self.start()
        lim = limits or self.limits
        worker = self._idle.get()
        try:
            reply = worker.request({
                **body, "timeout_s": lim.timeout_s, "memory_mb": lim.memory_mb,
                "max_pids": lim.max_pids, "output_bytes": lim.output_bytes, "work_mb": lim.work_mb,
            })
        except KitError:
            worker.close()
            with self._lock:
                self._all.remove(worker)
                worker = self._new_worker()
                self._all.append(worker)
            reply = {"status": "sandbox_error", "exit_code": None, "output": "sandbox process died", "duration_s": 0}
        finally:
            self._idle.put(worker)
        if reply["status"] == "sandbox_error":
            raise KitError(f"The {self.mode} sandbox failed to isolate a program: {reply.get('output', '')[:300]}",
                           FIXES.get(self.mode, "") + f"; {UNSAFE}.")
        return ExecResult(
            status=reply["status"], exit_code=reply.get("exit_code"), output=reply.get("output", ""),
            duration_s=reply.get("duration_s", 0.0), peak_pids=reply.get("peak_pids"),
            oom=bool(reply.get("oom")), output_truncated=bool(reply.get("output_truncated")),
            channel=reply.get("channel", ""), channel_truncated=bool(reply.get("channel_truncated")),
        )

    def run_many(self, programs: list[str], limits: Limits | None = None) -> list[ExecResult]:
        self.start()
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(lambda p: self.run(p, limits), programs))

    def close(self) -> None:
        with self._lock:
            for worker in self._all:
                worker.close()
            self._all.clear()
            self._idle = queue.Queue()
            if self._view_dir:
                shutil.rmtree(self._view_dir, ignore_errors=True)
                self._view_dir, self._view = None, None

    def __enter__(self) -> "Sandbox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _import_dirs() -> list[str]:
    """The folders the zygote (``python -I -S``) imports from: the standard library and its extension modules."""
    stdlib, platstdlib = sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")
    return list(dict.fromkeys([stdlib, platstdlib, os.path.join(platstdlib, "lib-dynload")]))


def probe(mode: str = "namespaces") -> tuple[bool, str]:
    """Can this machine run the sandbox? Returns (ok, reason); with "auto" the reason names the mode in use."""
    try:
        with Sandbox(mode, workers=1) as box:
            result = box.run("print('sandbox-ok')")
            used = box.mode
    except KitError as exc:
        return False, exc.problem
    if result.passed and "sandbox-ok" in result.output:
        return True, f"{used} sandbox works" + (" (auto)" if mode == "auto" else "")
    return False, f"a trivial program did not pass in the {used} sandbox ({result.status}: {result.output[:200]})"
