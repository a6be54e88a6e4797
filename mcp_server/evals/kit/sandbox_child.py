"""The sandbox zygote: a stdlib-only process that runs untrusted Python programs one at a time.

Started by ``sandbox.Sandbox`` as ``python -I -S sandbox_child.py MODE`` with an environment that
holds only PATH, so nothing secret is in its memory when it forks. It reads one JSON request per
line on stdin ({"code", "timeout_s", "memory_mb", "max_pids", "output_bytes"}) and writes one JSON
reply per line on stdout ({"status", "exit_code", "output", "duration_s", "peak_pids", "oom"}).

Per program, in MODE ``namespaces``:
  1. a fresh pids + memory cgroup (v1) under this process's own cgroup, with the limits set;
  2. fork → child A joins both cgroups and unshares mount, network, PID, IPC and UTS namespaces;
  3. fork → B, PID 1 of the new PID namespace: it builds a new root on a tmpfs holding only
     read-only binds of the system and Python library folders, a fresh writable /work (tmpfs,
     size-capped) that is the working directory, HOME and TMPDIR, its own /proc and a minimal
     /dev; pivots into it and detaches the old root; remounts the root read-only; sets RLIMIT_AS,
     RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE and RLIMIT_CORE; empties the environment except PATH;
     drops to uid/gid 65534 with no_new_privs; then executes the program in-process;
  4. at the end (exit, timeout or output flood) every process left in the cgroup is SIGKILLed and
     the cgroups are removed. The network namespace has only a down loopback interface.

MODE ``unsafe-host`` (only when asked for): a forked child in its own session with a temporary
working directory, the same rlimits and an empty environment — no namespaces, no cgroups.
"""

import ctypes
import importlib
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

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
# Modules generated code commonly imports, loaded once here so each fork starts warm.
WARM = ("collections", "functools", "heapq", "itertools", "math", "re", "string", "bisect", "copy", "fractions",
        "hashlib", "operator", "random", "statistics", "typing")
for _name in WARM:
    importlib.import_module(_name)
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine())
NOBODY = 65534
PATH = "/usr/local/bin:/usr/bin:/bin"
CGROUP_ROOT = "/sys/fs/cgroup"

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _own_cgroup(controller: str) -> str:
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controller in controllers.split(","):
                return path
    raise OSError(f"no {controller} cgroup (v1) for this process")


class Cgroups:
    """One pids + one memory cgroup (v1) for one program."""

    def __init__(self, base: dict, max_pids: int, memory_mb: int):
        name = uuid.uuid4().hex[:12]
        self.dirs = {c: os.path.join(base[c], name) for c in ("pids", "memory")}
        for d in self.dirs.values():
            os.mkdir(d)
        self._write("pids", "pids.max", str(max_pids))
        limit = str(memory_mb * 1024 * 1024)
        self._write("memory", "memory.limit_in_bytes", limit)
        try:  # no swap either, where the kernel accounts it
            self._write("memory", "memory.memsw.limit_in_bytes", limit)
        except OSError:
            pass

    def _write(self, ctl: str, name: str, value: str) -> None:
        with open(os.path.join(self.dirs[ctl], name), "w") as fh:
            fh.write(value)

    def _read(self, ctl: str, name: str) -> str:
        try:
            with open(os.path.join(self.dirs[ctl], name)) as fh:
                return fh.read()
        except OSError:
            return ""

    def join(self) -> None:
        for ctl in ("pids", "memory"):
            self._write(ctl, "cgroup.procs", str(os.getpid()))

    def kill_all(self) -> None:
        for _ in range(200):
            pids = [int(p) for p in self._read("pids", "cgroup.procs").split()]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.002)

    def facts(self) -> dict:
        peak = self._read("pids", "pids.peak").strip()
        oom_kills = 0
        for line in self._read("memory", "memory.oom_control").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                oom_kills = int(value)
        return {"peak_pids": int(peak) if peak.isdigit() else None, "oom": oom_kills > 0}

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs.values():
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)


def _bind_ro(src: str, root: str) -> None:
    target = root + src
    if os.path.islink(src):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(src), target)
        return
    if not os.path.isdir(src) or os.path.isdir(target) and os.listdir(target):
        return
    os.makedirs(target, exist_ok=True)
    _mount(src, target, None, MS_BIND | MS_REC)
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _library_dirs() -> list:
    """Folders the program may read: system libraries and this interpreter's own prefix."""
    dirs = ["/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin"]
    for prefix in {sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}:
        if not any(prefix == d or prefix.startswith(d + "/") for d in dirs if not os.path.islink(d)):
            dirs.append(prefix)
    return dirs


def _build_root(root: str, work_mb: int) -> None:
    """Inside the new mount namespace: a read-only tmpfs root with library binds and /work."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
    for d in _library_dirs():
        _bind_ro(d, root)
    os.mkdir(root + "/work")
    _mount("tmpfs", root + "/work", "tmpfs", MS_NOSUID | MS_NODEV, f"size={work_mb}m,mode=0700,uid={NOBODY},gid={NOBODY}")
    os.mkdir(root + "/proc")
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.mkdir(root + "/dev")
    for name in ("null", "zero", "random", "urandom"):
        open(f"{root}/dev/{name}", "w").close()
        _mount(f"/dev/{name}", f"{root}/dev/{name}", None, MS_BIND)
    os.symlink("/work", root + "/tmp")
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(root)
    _check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/work")


def _limits(req: dict) -> None:
    mem = req["memory_mb"] * 1024 * 1024
    cpu = max(1, int(req["timeout_s"] + 1))
    for lim, value in (
        (resource.RLIMIT_AS, mem), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, 16 * 1024 * 1024), (resource.RLIMIT_NOFILE, 64),
    ):
        resource.setrlimit(lim, (value, value))


def _run_program(code: str) -> None:
    """Execute the program in this (already isolated) process and exit with its status."""
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    sys.stdin = open(os.devnull)
    status = 0
    try:
        exec(compile(code, "<program>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
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


def _isolated_child(req: dict, cg: Cgroups, root: str, out_w: int) -> None:
    """Child A: join the cgroups, unshare namespaces, fork PID 1 (B) and wait for it."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    cg.join()
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    pid = os.fork()
    if pid == 0:
        try:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            _build_root(root, req.get("work_mb", 64))
            _prepare_process(req, out_w)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        except BaseException as exc:  # noqa: BLE001 - report a broken sandbox, never run unsandboxed
            os.write(out_w, f"TUNEPACK_SANDBOX_SETUP_FAILED {exc!r}\n".encode())
            os._exit(121)
        _run_program(req["code"])
    _, status = os.waitpid(pid, 0)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _prepare_process(req: dict, out_w: int) -> None:
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.closerange(3, 4096)
    os.environ.clear()
    os.environ.update({"PATH": PATH, "HOME": "/work", "TMPDIR": "/work", "LANG": "C.UTF-8"})
    tempfile.tempdir = None
    _limits(req)


def _host_child(req: dict, out_w: int) -> None:
    """unsafe-host: own session, temporary working directory, rlimits, empty environment."""
    os.setsid()
    work = tempfile.mkdtemp(prefix="tunepack-unsafe-")
    os.chdir(work)
    _prepare_process(req, out_w)
    os.environ.update({"HOME": work, "TMPDIR": work})
    _run_program(req["code"])


def _start(req: dict, mode: str, cg: Cgroups | None, root: str | None, out_r: int, out_w: int) -> int:
    """Fork the program's process (child A, or the unsafe-host child), writing to ``out_w``; its pid."""
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        try:
            if mode == "namespaces":
                assert cg is not None and root is not None, "namespaces mode has its cgroups and root folder"
                _isolated_child(req, cg, root, out_w)
            else:
                _host_child(req, out_w)
        except BaseException as exc:  # noqa: BLE001 - report why isolation failed; never run the program
            os.write(out_w, f"TUNEPACK_SANDBOX_SETUP_FAILED {exc!r}\n".encode())
        finally:
            os._exit(122)
    os.close(out_w)
    return pid


def _collect(out_r: int, pid: int, deadline: float, limit: int) -> tuple[bytes, int, int | None, bool]:
    """Read the output until the program exits or ``deadline`` passes: (its first ``limit`` bytes, total size,
    wait status or None while it still runs, timed out)."""
    chunks, size, status, timed_out = [], 0, None, False

    def take() -> bool:
        """Read what the pipe holds (keeping the first ``limit`` bytes); False at end of output."""
        nonlocal size
        data = os.read(out_r, 65536)
        if data and size < limit:
            chunks.append(data[: limit - size])
        size += len(data)
        return bool(data)

    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([out_r], [], [], min(left, 0.05))
        if ready and not take():
            break
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            # drain what is already buffered, then stop even if grandchildren hold the pipe
            while select.select([out_r], [], [], 0)[0] and take():
                pass
            break
    return b"".join(chunks), size, status, timed_out


def _stop(pid: int, cg: Cgroups | None, status: int | None, out_r: int) -> tuple[int, dict]:
    """Kill whatever the program left running, reap it, close the pipe: (wait status, cgroup facts)."""
    facts = {}
    if cg is not None:
        cg.kill_all()
        facts = cg.facts()
    else:
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
    os.close(out_r)
    if cg is not None:
        cg.remove()
    return status, facts


def _verdict(code: int, timed_out: bool, facts: dict) -> str:
    if timed_out:
        return "timeout"
    if code in (121, 122):  # 121: B could not isolate itself; 122: A could not (unshare, cgroups)
        return "sandbox_error"
    if facts.get("oom") or code in (-9, 137):
        return "oom" if facts.get("oom") else "killed"
    return "passed" if code == 0 else "failed"


def run_one(req: dict, mode: str, base: dict | None, root: str | None) -> dict:
    """``base`` (the cgroup folders) and ``root`` are set in namespaces mode, None in unsafe-host mode."""
    start = time.monotonic()
    out_r, out_w = os.pipe()
    cg = None
    if mode == "namespaces":
        assert base is not None, "namespaces mode made its cgroup folders at start"
        cg = Cgroups(base, req["max_pids"], req["memory_mb"])
    pid = _start(req, mode, cg, root, out_r, out_w)
    limit = req.get("output_bytes", 16384)
    data, size, status, timed_out = _collect(out_r, pid, start + req["timeout_s"], limit)
    status, facts = _stop(pid, cg, status, out_r)
    code = os.waitstatus_to_exitcode(status)
    return {
        "status": _verdict(code, timed_out, facts), "exit_code": code, "output": data.decode("utf-8", "replace"),
        "output_truncated": size > limit, "duration_s": round(time.monotonic() - start, 4), **facts,
    }


def main() -> int:
    mode = sys.argv[1]
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    base, root = None, None
    scratch = tempfile.mkdtemp(prefix="tunepack-sandbox-")
    try:
        if mode == "namespaces":
            if SYS_PIVOT_ROOT is None:
                raise OSError(f"pivot_root syscall number unknown on {platform.machine()}")
            base = {}
            for ctl in ("pids", "memory"):
                path = os.path.join(CGROUP_ROOT, ctl) + _own_cgroup(ctl).rstrip("/") + f"/tunepack-{os.getpid()}"
                os.makedirs(path, exist_ok=True)
                base[ctl] = path
            root = os.path.join(scratch, "root")
            os.mkdir(root)
        check = run_one({"code": "print('ok')", "timeout_s": 10, "memory_mb": 128, "max_pids": 8}, mode, base, root)
        if check["status"] != "passed":  # refuse at start, not on the first real program
            raise OSError(f"self-test failed ({check['status']}): {check['output'].strip()[-300:]}")
        sys.stdout.write(json.dumps({"ready": True, "mode": mode}) + "\n")
        sys.stdout.flush()
        for line in sys.stdin:
            req = json.loads(line)
            try:
                reply = run_one(req, mode, base, root)
            except Exception as exc:  # noqa: BLE001 - the host decides what a broken sandbox means
                reply = {"status": "sandbox_error", "exit_code": None, "output": f"{exc!r}", "duration_s": 0}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    except Exception as exc:  # noqa: BLE001
        sys.stdout.write(json.dumps({"ready": False, "error": f"{exc!r}"}) + "\n")
        sys.stdout.flush()
        return 1
    finally:
        for d in (base or {}).values():
            try:
                os.rmdir(d)
            except OSError:
                pass
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
