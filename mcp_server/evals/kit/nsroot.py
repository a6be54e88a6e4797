"""The namespaces sandbox's machinery, for ``sandbox_child.py`` (which loads it beside itself): the program's pids
and memory cgroups (v1) under the zygote's own, and the new root it pivots into: a tmpfs holding read-only binds
of the system and Python library folders, a size-capped writable /work, its own /proc and a minimal /dev.
Standard library only."""

import ctypes
import os
import platform
import signal
import sys
import time
import uuid

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine())
NOBODY = 65534
CGROUP_ROOT = "/sys/fs/cgroup"

libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    check(libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def own_cgroup(controller: str) -> str:
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


def build_root(root: str, work_mb: int) -> None:
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
    check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    check(libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/work")
