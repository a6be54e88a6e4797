"""The sandbox zygote: a stdlib-only process that runs untrusted Python programs one at a time.

Started by ``sandbox.Sandbox`` as ``python -I -S sandbox_child.py MODE [VIEW_JSON]`` with an environment that
holds only PATH, so nothing secret is in its memory when it forks. It reads one JSON request per line on
stdin and writes one JSON reply per line on stdout ({"status", "exit_code", "output", "channel",
"duration_s", "peak_pids", "oom"}). A request is {"code", limits...} (a whole program: passing means exit
status 0) or {"trial", "nonce", limits...} (the answer and the tests, run by ``harness.py``): the trial's one
result line comes back as "channel", read from a pipe of its own (fd 3 of the program), apart from the output.

Per program, in MODE ``namespaces``:
  1. a fresh pids + memory cgroup (v1) under this process's own cgroup, with the limits set;
  2. fork -> child A joins both cgroups and unshares mount, network, PID, IPC and UTS namespaces;
  3. fork -> B, PID 1 of the new PID namespace: it builds a new root on a tmpfs holding only
     read-only binds of the system and Python library folders, a fresh writable /work (tmpfs,
     size-capped) that is the working directory, HOME and TMPDIR, its own /proc and a minimal
     /dev; pivots into it and detaches the old root; remounts the root read-only; sets RLIMIT_AS,
     RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE and RLIMIT_CORE; empties the environment except PATH;
     drops to uid/gid 65534 with no_new_privs; then executes the program in-process;
  4. at the end (exit, timeout or output flood) every process left in the cgroup is SIGKILLed and
     the cgroups are removed. The network namespace has only a down loopback interface.

MODE ``confined`` (no namespaces needed, as in HF Jobs containers): this zygote claims a uid of its own (one
per worker, from ``confine.UID_BASE``) and becomes the subreaper of what its programs leave. Per program: a
fresh work folder owned by that uid (cwd, HOME, TMPDIR); fork -> a child in its own session with the rlimits
above plus RLIMIT_NPROC, an empty environment, the uid, no_new_privs, a Landlock domain (read/execute the
system library folders and a readable view of the Python library, write only the work folder; no TCP; from
ABI 6 no signals or abstract sockets outside the domain) and a seccomp filter (no sockets, ptrace,
process_vm_*, namespaces, mounts; see ``confine.py``). At the end every process of the uid is killed
(kill(-1) as that uid, until /proc shows none), detached ones included, and the work folder is removed.

MODE ``unsafe-host`` (only when asked for): a forked child in its own session with a temporary
working directory, the same rlimits and an empty environment: no namespaces, no cgroups, still root.
"""

import ctypes
import importlib
import importlib.util
import json
import os
import platform
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
import uuid
from typing import Any

# Modules generated code commonly imports, loaded once here so each fork starts warm.
WARM = ("collections", "functools", "heapq", "itertools", "math", "re", "string", "bisect", "copy", "fractions",
        "hashlib", "operator", "random", "statistics", "typing")
for _name in WARM:
    importlib.import_module(_name)
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
NOBODY = 65534
PATH = "/usr/local/bin:/usr/bin:/bin"
PR_SET_CHILD_SUBREAPER = 36
CHANNEL_LIMIT = 1 << 20  # bytes of the result line kept; more fails the run
RESULT_FD = 3

libc = ctypes.CDLL(None, use_errno=True)



def _sibling(name: str):
    """A module of the kit beside this file (this script runs with -I -S: the kit is not on sys.path)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"tunepack_sandbox_{name}", path)
    assert spec is not None and spec.loader is not None, f"the kit file {path} is there"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


harness = _sibling("harness")
nsroot = _sibling("nsroot")
confine = _sibling("confine")
probe = _sibling("probe")


class Context:
    """What one zygote keeps between programs: its mode and, per mode, its cgroups, root or uid."""

    def __init__(self, mode: str, scratch: str):
        self.mode, self.scratch = mode, scratch
        self.base: dict | None = None  # namespaces: the cgroup folders
        self.root: str | None = None  # namespaces: where the new root is built
        self.uid: int | None = None  # confined: this zygote's own uid
        self.lock = None  # confined: holds the uid
        self.abi = 0  # confined: the Landlock ABI
        self.read_dirs: list = []  # confined: what the program may read and execute
        self.python_paths: list = []  # confined: the program's sys.path (readable by its uid)
        self.runs = 0

    def work_dir(self) -> str:
        """A fresh folder for one program (confined: only its uid can enter; the scratch folder above lists for
        no one); removed after the program."""
        self.runs += 1
        path = os.path.join(self.scratch, f"w{self.runs}-{uuid.uuid4().hex[:8]}")
        os.mkdir(path, 0o700)
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        return path


def _limits(req: dict) -> None:
    mem = req["memory_mb"] * 1024 * 1024
    cpu = max(1, int(req["timeout_s"] + 1))
    for lim, value in (
        (resource.RLIMIT_AS, mem), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, 16 * 1024 * 1024), (resource.RLIMIT_NOFILE, 64),
    ):
        resource.setrlimit(lim, (value, value))


def _writer(fd: int):
    def write(text: str) -> None:
        data = text.encode("utf-8", "replace")
        while data:
            data = data[os.write(fd, data):]
    return write


def _run_program(req: dict) -> None:
    """Execute the program (or the trial) in this (already isolated) process and exit with its status."""
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    sys.stdin = open(os.devnull)
    status = 0
    if "trial" in req:
        status = harness.run_trial(req["trial"], req["nonce"], _writer(RESULT_FD))
    else:
        try:
            exec(compile(req["code"], "<program>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 - any failure of the program is its result
            traceback.print_exc()
            status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status & 0xFF)


def _isolated_child(req: dict, ctx: Context, cg: Any, fds: tuple) -> None:
    """Child A: join the cgroups, unshare namespaces, fork PID 1 (B) and wait for it."""
    assert ctx.root is not None, "namespaces mode made its root folder at start"
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    cg.join()
    nsroot.check(libc.unshare(nsroot.CLONE_NEWNS | nsroot.CLONE_NEWNET | nsroot.CLONE_NEWPID | nsroot.CLONE_NEWIPC | nsroot.CLONE_NEWUTS), "unshare")
    pid = os.fork()
    if pid == 0:
        try:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            nsroot.build_root(ctx.root, req.get("work_mb", 64))
            _prepare_process(req, fds)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            nsroot.check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        except BaseException as exc:  # noqa: BLE001 - report a broken sandbox, never run unsandboxed
            _report(fds, exc)
            os._exit(121)
        _run_program(req)
    _, status = os.waitpid(pid, 0)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _report(fds: tuple, exc: BaseException) -> None:
    """Why the setup failed, on the output pipe (fd 1 and 2 once ``_prepare_process`` moved it there)."""
    data = f"TUNEPACK_SANDBOX_SETUP_FAILED {exc!r}\n".encode()
    for fd in (fds[0], 2):
        try:
            os.write(fd, data)
            return
        except OSError:
            continue


def _prepare_process(req: dict, fds: tuple) -> None:
    """Output on 1 and 2, the result channel on 3, nothing else open; the environment emptied; rlimits."""
    out_w, res_w = fds
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    if res_w != RESULT_FD:
        os.dup2(res_w, RESULT_FD)
    os.closerange(RESULT_FD + 1, 4096)
    os.environ.clear()
    os.environ.update({"PATH": PATH, "HOME": "/work", "TMPDIR": "/work", "LANG": "C.UTF-8"})
    tempfile.tempdir = None
    _limits(req)


def _confined_child(req: dict, ctx: Context, work: str, fds: tuple) -> None:
    """confined: own session, the work folder, rlimits, the uid, Landlock, seccomp; then the program."""
    assert ctx.uid is not None, "confined mode claimed its uid at start"
    os.setsid()
    os.chdir(work)
    _prepare_process(req, fds)
    os.environ.update({"HOME": work, "TMPDIR": work})
    nproc = int(req.get("max_pids", 32))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    ruleset = confine.landlock_ruleset(ctx.read_dirs, work, ctx.abi)
    confine.become(ctx.uid)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # a uid change clears it: set it again
    confine.no_new_privs()
    confine.landlock_restrict(ruleset)
    confine.install_seccomp()
    sys.path[:] = ctx.python_paths
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    _run_program(req)


def _host_child(req: dict, work: str, fds: tuple) -> None:
    """unsafe-host: own session, temporary working directory, rlimits, empty environment."""
    os.setsid()
    os.chdir(work)
    _prepare_process(req, fds)
    os.environ.update({"HOME": work, "TMPDIR": work})
    _run_program(req)


def _start(req: dict, ctx: Context, cg: Any, work: str | None, reads: tuple, fds: tuple) -> int:
    """Fork the program's process (child A, the confined child or the unsafe-host child); its pid."""
    pid = os.fork()
    if pid == 0:
        for fd in reads:
            os.close(fd)
        try:
            if ctx.mode == "namespaces":
                assert cg is not None, "namespaces mode has its cgroups"
                _isolated_child(req, ctx, cg, fds)
            elif ctx.mode == "confined":
                assert work is not None, "confined mode has its work folder"
                _confined_child(req, ctx, work, fds)
            else:
                assert work is not None, "unsafe-host mode has its work folder"
                _host_child(req, work, fds)
        except BaseException as exc:  # noqa: BLE001 - report why isolation failed; never run the program
            _report(fds, exc)
        finally:
            os._exit(122)
    for fd in fds:
        os.close(fd)
    return pid


class Pipes:
    """The program's output (first ``limit`` bytes kept) and its result channel, read side by side."""

    def __init__(self, out_r: int, res_r: int, limit: int):
        self.limits = {out_r: limit, res_r: CHANNEL_LIMIT}
        self.chunks: dict = {out_r: [], res_r: []}
        self.sizes = {out_r: 0, res_r: 0}
        self.open = {out_r, res_r}
        self.out_r, self.res_r = out_r, res_r

    def take(self, fd: int) -> None:
        data = os.read(fd, 65536)
        if not data:
            self.open.discard(fd)
            return
        if self.sizes[fd] < self.limits[fd]:
            self.chunks[fd].append(data[: self.limits[fd] - self.sizes[fd]])
        self.sizes[fd] += len(data)

    def wait(self, timeout: float) -> None:
        if not self.open:
            time.sleep(timeout)
            return
        for fd in select.select(list(self.open), [], [], timeout)[0]:
            self.take(fd)

    def drain(self, rounds: int = 4096) -> None:
        """Read what is already there (stop even if someone still holds a pipe open)."""
        for _ in range(rounds):
            ready = select.select(list(self.open), [], [], 0)[0] if self.open else []
            if not ready:
                return
            for fd in ready:
                self.take(fd)

    def text(self, fd: int) -> str:
        return b"".join(self.chunks[fd]).decode("utf-8", "replace")

    def close(self) -> None:
        for fd in (self.out_r, self.res_r):
            os.close(fd)


MAX_WORK_FILES = 4096  # the confined watchdog's bound on the entries of a work folder


def work_usage(work: str, limit: int = MAX_WORK_FILES) -> tuple[int, int]:
    """(bytes allocated, entries) under ``work``, counting no further than ``limit`` entries."""
    used = entries = 0
    stack = [work]
    while stack and entries <= limit:
        try:
            with os.scandir(stack.pop()) as listing:
                for entry in listing:
                    entries += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    used += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return used, entries


def _collect(pipes: Pipes, pid: int, deadline: float, work: str | None = None,
             work_bytes: int = 0) -> tuple[int | None, bool, str | None]:
    """Read until the program exits or ``deadline`` passes: (wait status or None while it runs, timed out, why the
    watchdog stopped it). ``work``: a folder on the host's disk (confined mode), measured every 0.2 s."""
    checked = time.monotonic()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, True, None
        pipes.wait(min(left, 0.05))
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            pipes.drain()
            return status, False, None
        if work is not None and time.monotonic() - checked >= 0.2:
            checked = time.monotonic()
            used, entries = work_usage(work)
            if used > work_bytes or entries > MAX_WORK_FILES:
                return None, False, (f"the program wrote more than the work folder holds ({work_bytes // 2 ** 20} MB, "
                                     f"{MAX_WORK_FILES} files)")


def _stop(pid: int, ctx: Context, cg: Any, status: int | None) -> tuple[int, dict]:
    """Kill whatever the program left running and reap it: (wait status, facts)."""
    facts: dict = {}
    if cg is not None:
        cg.kill_all()
        facts = cg.facts()
    elif ctx.mode != "confined":
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if status is None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    if ctx.mode == "confined":
        assert ctx.uid is not None, "confined mode claimed its uid at start"
        if not confine.kill_uid(ctx.uid):
            facts["left_running"] = True
    if cg is not None:
        cg.remove()
    return status, facts


def _verdict(code: int, timed_out: bool, facts: dict) -> str:
    if timed_out:
        return "timeout"
    if code in (121, 122) or facts.get("left_running"):  # 121/122: B or A could not isolate it
        return "sandbox_error"
    if facts.get("disk"):
        return "killed"
    if facts.get("oom") or code in (-9, 137):
        return "oom" if facts.get("oom") else "killed"
    return "passed" if code == 0 else "failed"


def run_one(req: dict, ctx: Context) -> dict:
    start = time.monotonic()
    out_r, out_w = os.pipe()
    res_r, res_w = os.pipe()
    cg = nsroot.Cgroups(ctx.base, req["max_pids"], req["memory_mb"]) if ctx.mode == "namespaces" and ctx.base else None
    work = ctx.work_dir() if ctx.mode != "namespaces" else None
    pipes = Pipes(out_r, res_r, req.get("output_bytes", 16384))
    try:
        pid = _start(req, ctx, cg, work, (out_r, res_r), (out_w, res_w))
        status, timed_out, full = _collect(pipes, pid, start + req["timeout_s"], work,
                                           req.get("work_mb", 64) * 2 ** 20)
        status, facts = _stop(pid, ctx, cg, status)
        if full:
            facts["disk"] = full
        pipes.drain()  # what the killed processes had written
    finally:
        pipes.close()
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    code = os.waitstatus_to_exitcode(status)
    output = pipes.text(out_r)
    if facts.get("left_running"):
        output += "\nTUNEPACK_SANDBOX_SETUP_FAILED processes of the sandbox uid survived the kill"
    if facts.get("disk"):
        output += f"\nTUNEPACK_SANDBOX: stopped: {facts['disk']}"
    return {
        "status": _verdict(code, timed_out, facts), "exit_code": code, "output": output,
        "output_truncated": pipes.sizes[out_r] > pipes.limits[out_r], "channel": pipes.text(res_r),
        "channel_truncated": pipes.sizes[res_r] > CHANNEL_LIMIT, "duration_s": round(time.monotonic() - start, 4),
        **{k: v for k, v in facts.items() if k != "left_running"},
    }


SELF_TEST = {
    "namespaces": "print('ok')",
    "unsafe-host": "print('ok')",
    # the filter and the Landlock domain really hold: no socket, no /proc, not root
    "confined": "import os, socket\n"
                "try:\n    socket.socket()\n    print('socket allowed')\nexcept PermissionError:\n    pass\n"
                "try:\n    open('/proc/self/status')\n    print('/proc readable')\nexcept OSError:\n    pass\n"
                "print('ok' if os.getuid() != 0 else 'still root')",
}


def _start_namespaces(ctx: Context) -> None:
    if nsroot.SYS_PIVOT_ROOT is None:
        raise OSError(f"pivot_root syscall number unknown on {platform.machine()}")
    ctx.base = {}
    for ctl in ("pids", "memory"):
        path = os.path.join(nsroot.CGROUP_ROOT, ctl) + nsroot.own_cgroup(ctl).rstrip("/") + f"/tunepack-{os.getpid()}"
        os.makedirs(path, exist_ok=True)
        ctx.base[ctl] = path
    ctx.root = os.path.join(ctx.scratch, "root")
    os.mkdir(ctx.root)


def _start_confined(ctx: Context, view: dict) -> None:
    """Refuse with the reason when Landlock, seccomp or the uid switch is missing; else claim a uid."""
    ctx.abi = confine.landlock_abi_or_reason()
    if not probe.sandbox_seccomp():
        raise OSError("seccomp filters are not available here (the kernel lacks CONFIG_SECCOMP_FILTER, or a "
                      "filter already in force forbids adding one)")
    if not probe.sandbox_uid_switch():
        raise OSError("this process cannot switch to the sandbox uid (confined mode runs as root, or with "
                      "CAP_SETUID and CAP_SETGID, to give each worker a uid of its own)")
    if confine.ARCH not in confine.SYSCALLS:
        raise OSError(f"no seccomp syscall table for {confine.ARCH} (x86_64 and aarch64 are known)")
    nsroot.check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
    ctx.uid, ctx.lock = confine.claim_uid()
    os.chmod(ctx.scratch, 0o711)
    ctx.python_paths = [p for p in (confine.map_path(view, p) for p in sys.path) if p]
    if not ctx.python_paths:
        raise OSError(f"the Python library ({', '.join(sys.path)}) is not readable by the sandbox uid")
    ctx.read_dirs = [d for d in confine.SYSTEM_DIRS if os.path.isdir(d)] + ctx.python_paths


def main() -> int:
    mode = sys.argv[1]
    view = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    ctx = Context(mode, "")
    try:
        ctx.scratch = tempfile.mkdtemp(prefix="tunepack-sandbox-",
                                       dir=confine.shared_tmp() if mode == "confined" else None)
        if mode == "namespaces":
            _start_namespaces(ctx)
        elif mode == "confined":
            _start_confined(ctx, view)
        check = run_one({"code": SELF_TEST[mode], "timeout_s": 10, "memory_mb": 128, "max_pids": 8}, ctx)
        harness.prepare()  # every module the programs start with is loaded by now
        if check["status"] != "passed" or check["output"].strip() != "ok":  # refuse at start, not later
            raise OSError(f"self-test failed ({check['status']}): {check['output'].strip()[-300:]}")
        sys.stdout.write(json.dumps({"ready": True, "mode": mode, "uid": ctx.uid, "landlock_abi": ctx.abi}) + "\n")
        sys.stdout.flush()
        for line in sys.stdin:
            req = json.loads(line)
            try:
                reply = run_one(req, ctx)
            except Exception as exc:  # noqa: BLE001 - the host decides what a broken sandbox means
                reply = {"status": "sandbox_error", "exit_code": None, "output": f"{exc!r}", "duration_s": 0}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    except Exception as exc:  # noqa: BLE001
        sys.stdout.write(json.dumps({"ready": False, "error": f"{exc}"}) + "\n")
        sys.stdout.flush()
        return 1
    finally:
        if ctx.uid is not None:
            confine.kill_uid(ctx.uid)
        for d in (ctx.base or {}).values():
            try:
                os.rmdir(d)
            except OSError:
                pass
        if ctx.scratch:
            shutil.rmtree(ctx.scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
