"""Run untrusted Python programs (model-generated code and its tests) in isolation.

    with Sandbox("namespaces", workers=2) as box:
        result = box.run("assert 1 + 1 == 2")          # ExecResult(status="passed", ...)
        results = box.run_many([prog1, prog2, ...])     # in parallel, one zygote per worker

Modes:
- ``namespaces`` (default): per program a new mount/network/PID namespace, a read-only root with
  only library folders, a fresh size-capped /work as cwd and HOME, pids + memory cgroup (v1)
  limits, rlimits, an empty environment and uid 65534; everything killed at the end. Needs Linux,
  root (or CAP_SYS_ADMIN) and cgroup v1 ``pids`` + ``memory``; otherwise ``start`` refuses.
- ``unsafe-host``: a forked process with a temporary cwd, rlimits and an empty environment but no
  namespaces or cgroups. Only when explicitly chosen; results are labelled so.
The work happens in ``sandbox_child.py`` (stdlib only), started with an environment holding only
PATH so that no token is ever in the memory the programs fork from.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .errors import KitError

CHILD = Path(__file__).with_name("sandbox_child.py")
SAFE_MODES = ("namespaces",)
MODES = ("namespaces", "unsafe-host")
CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"


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

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class _Worker:
    def __init__(self, mode: str):
        self.proc: subprocess.Popen[str] | None
        try:
            self.proc = proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(CHILD), mode],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={"PATH": CHILD_PATH}, cwd="/", close_fds=True, text=True, bufsize=1,
            )
            assert proc.stdout is not None, "stdout=PIPE"
            ready = json.loads(proc.stdout.readline() or '{"ready": false, "error": "the sandbox process exited"}')
        except OSError as exc:
            self.proc, ready = None, {"ready": False, "error": repr(exc)}
        if not ready.get("ready"):
            self.close()
            raise KitError(
                f"The '{mode}' sandbox cannot start here: {ready.get('error')}.",
                "run evaluations as root on Linux with cgroup v1 pids+memory mounted (as on the CI and "
                "job machines), or set eval.sandbox: unsafe-host to run generated code without isolation "
                "(results are then labelled unsafe-host).",
            )

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
            self.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait()


class Sandbox:
    """A pool of sandbox zygotes; ``run`` is thread-safe."""

    def __init__(self, mode: str = "namespaces", workers: int | None = None, limits: Limits | None = None):
        if mode not in MODES:
            raise KitError(f"Unknown sandbox mode '{mode}'.", f"use one of: {', '.join(MODES)}.")
        if not sys.platform.startswith("linux"):
            raise KitError(
                f"The sandbox needs Linux (this is {sys.platform}).",
                "run the evaluation as a job on Linux (local Linux machine or HF Jobs).",
            )
        self.mode = mode
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.limits = limits or Limits()
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()

    @property
    def isolated(self) -> bool:
        return self.mode in SAFE_MODES

    def start(self) -> "Sandbox":
        with self._lock:
            while len(self._all) < self.workers:
                worker = _Worker(self.mode)
                self._all.append(worker)
                self._idle.put(worker)
        return self

    def run(self, code: str, limits: Limits | None = None) -> ExecResult:
        if not self._all:
            self.start()
        lim = limits or self.limits
        worker = self._idle.get()
        try:
            reply = worker.request({
                "code": code, "timeout_s": lim.timeout_s, "memory_mb": lim.memory_mb,
                "max_pids": lim.max_pids, "output_bytes": lim.output_bytes, "work_mb": lim.work_mb,
            })
        except KitError:
            worker.close()
            with self._lock:
                self._all.remove(worker)
                worker = _Worker(self.mode)
                self._all.append(worker)
            reply = {"status": "sandbox_error", "exit_code": None, "output": "sandbox process died", "duration_s": 0}
        finally:
            self._idle.put(worker)
        if reply["status"] == "sandbox_error":
            raise KitError(
                f"The sandbox failed to isolate a program: {reply.get('output', '')[:300]}",
                "check that this machine allows mount/network/PID namespaces and cgroups for root, or "
                "set eval.sandbox: unsafe-host knowingly.",
            )
        return ExecResult(
            status=reply["status"], exit_code=reply.get("exit_code"), output=reply.get("output", ""),
            duration_s=reply.get("duration_s", 0.0), peak_pids=reply.get("peak_pids"),
            oom=bool(reply.get("oom")), output_truncated=bool(reply.get("output_truncated")),
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

    def __enter__(self) -> "Sandbox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def probe(mode: str = "namespaces") -> tuple[bool, str]:
    """Can this machine run the sandbox? Returns (ok, reason)."""
    try:
        with Sandbox(mode, workers=1) as box:
            result = box.run("print('sandbox-ok')")
    except KitError as exc:
        return False, exc.problem
    if result.passed and "sandbox-ok" in result.output:
        return True, f"{mode} sandbox works"
    return False, f"a trivial program did not pass in the {mode} sandbox ({result.status}: {result.output[:200]})"
