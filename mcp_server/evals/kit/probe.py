"""What a machine offers the eval sandbox: Landlock, seccomp filters, namespaces, cgroups, a uid switch.

    facts = sandbox_facts()        # {"landlock_abi": 7, "seccomp": True, "namespaces": False, ...}
    sandbox_line(facts)            # "landlock abi 7, seccomp yes, namespaces no, ... -> auto uses confined"

Standard library only: the eval kit uses it to say why a mode cannot start, and the training script embeds it
verbatim so that the preflight's check on the job machine reports what that machine offers.
"""

import ctypes
import os

SANDBOX_CLONE_FLAGS = 0x00020000 | 0x04000000 | 0x08000000 | 0x20000000 | 0x40000000  # NS UTS IPC PID NET
SANDBOX_LANDLOCK_CREATE_RULESET = 444  # the same number on x86_64 and aarch64
SANDBOX_CAP_SETGID, SANDBOX_CAP_SETUID = 6, 7


def _sandbox_libc():
    return ctypes.CDLL(None, use_errno=True)


def sandbox_landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled (or the syscall is filtered)."""
    abi = _sandbox_libc().syscall(SANDBOX_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return abi if abi > 0 else 0


def _sandbox_in_child(step) -> bool:
    """Run ``step`` in a forked child; True when it returned True there (nothing of it reaches this process)."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if step() else 1)
        except BaseException:  # noqa: BLE001 - a failure means "not available"
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _sandbox_allow_all() -> bool:
    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]

    libc = _sandbox_libc()
    insns = (Insn * 1)(Insn(0x06, 0, 0, 0x7FFF0000))  # ret ALLOW
    prog = Prog(1, insns)
    if libc.prctl(38, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        return False  # PR_SET_NO_NEW_PRIVS
    return libc.prctl(22, ctypes.c_ulong(2), ctypes.byref(prog), ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0


def sandbox_seccomp() -> bool:
    """Can a process install a seccomp filter here (tried in a child)?"""
    return _sandbox_in_child(_sandbox_allow_all)


def sandbox_namespaces() -> bool:
    """Can this process make the mount, network, PID, IPC and UTS namespaces of the namespaces mode (in a child)?"""
    return _sandbox_in_child(lambda: _sandbox_libc().unshare(SANDBOX_CLONE_FLAGS) == 0)


def sandbox_cgroups_v1() -> bool:
    return all(os.access(f"/sys/fs/cgroup/{c}", os.W_OK) for c in ("pids", "memory"))


def sandbox_uid_switch() -> bool:
    """Does this process hold CAP_SETUID and CAP_SETGID (needed to run programs under their own uid)?"""
    try:
        with open("/proc/self/status") as fh:
            caps = next(int(line.split()[1], 16) for line in fh if line.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError):
        return os.geteuid() == 0
    return bool(caps >> SANDBOX_CAP_SETUID & 1 and caps >> SANDBOX_CAP_SETGID & 1)


def sandbox_facts() -> dict:
    facts: dict = {"landlock_abi": sandbox_landlock_abi(), "seccomp": sandbox_seccomp(),
                   "namespaces": sandbox_namespaces(), "cgroups_v1": sandbox_cgroups_v1(),
                   "uid_switch": sandbox_uid_switch()}
    if facts["namespaces"] and facts["cgroups_v1"]:
        facts["auto"] = "namespaces"
    elif facts["landlock_abi"] and facts["seccomp"] and facts["uid_switch"]:
        facts["auto"] = "confined"
    else:
        facts["auto"] = None
    facts["caps"] = CAPS.get(facts["auto"] or "", "none: generated code would run without isolation")
    return facts


# what bounds a program's memory and disk in each isolating mode (docs/security.md)
CAPS = {
    "namespaces": "memory: a cgroup counts all of it, memory files included; disk: a 64 MB tmpfs work folder",
    "confined": "memory: 512 MB a process x 32 processes, memfd_create refused (no cgroup here); disk: a watchdog "
                "stops a program past 64 MB or 4,096 files in its work folder, 16 MB a file",
}


def sandbox_line(facts: dict) -> str:
    yes = {True: "yes", False: "no"}
    head = (f"landlock abi {facts['landlock_abi'] or 'none'}, seccomp {yes[facts['seccomp']]}, "
            f"namespaces {yes[facts['namespaces']]}, cgroup v1 {yes[facts['cgroups_v1']]}, "
            f"uid switch {yes[facts['uid_switch']]}")
    if facts["auto"]:
        return f"{head} -> eval sandbox 'auto' uses {facts['auto']} ({facts['caps']})"
    return f"{head} -> no isolating eval sandbox here (only docker, or unsafe-host knowingly)"
