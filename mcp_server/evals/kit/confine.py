"""Confinement without namespaces, for the ``confined`` sandbox mode (HF Jobs containers cannot make namespaces).

    uid, lock = claim_uid()                  # a uid of its own for this zygote, held while ``lock`` is open
    ruleset = landlock_ruleset(read, work)   # as root, before the switch: read/execute ``read``, write ``work``
    become(uid); no_new_privs(); landlock_restrict(ruleset); install_seccomp()
    kill_uid(uid)                            # every process of that uid (a detached double fork included)

Standard library only (ctypes). The seccomp filter is a BPF program built here for x86_64 and aarch64: a
foreign architecture (and the x32 ABI) kills the process; socket creation, ptrace, process_vm_*, namespace
and mount calls, io_uring, bpf, perf, keyrings, module loading and ``memfd_create`` (anonymous memory files,
which no rlimit counts: without a memory cgroup here they are refused) answer EPERM; ``clone`` with a
CLONE_NEW* flag answers EPERM and ``clone3`` (whose flags a filter cannot read) ENOSYS, so the C library
falls back to ``clone``. Signals to other processes are stopped by the uid (and, from Landlock ABI 6, by its
signal scope); ptrace and /proc of other processes by the uid, Landlock and the filter.
"""

import ctypes
import os
import platform
import shutil
import signal
import socket
import stat
import time

UID_BASE, UID_SLOTS = 1_610_612_736, 256  # 0x60000000: far above any account a distribution creates
LOCK_PREFIX = "tunepack-sandbox-uid-"  # abstract unix socket names: released when the holder dies

ARCH = platform.machine()
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000
CLONE_NEW_MASK = 0x02000000 | 0x00020000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
DENIED = (
    "socket", "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "open_by_handle_at", "name_to_handle_at", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "swapon", "swapoff", "reboot",
    "acct", "quotactl", "syslog", "memfd_create", "memfd_secret",
)
SYSCALLS = {
    "x86_64": {
        "socket": 41, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "process_madvise": 440,
        "pidfd_getfd": 438, "kcmp": 312, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
        "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "open_by_handle_at": 304, "name_to_handle_at": 303,
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "keyctl": 250, "add_key": 248, "request_key": 249, "kexec_load": 246,
        "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176, "swapon": 167,
        "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179, "syslog": 103, "clone": 56, "clone3": 435,
        "memfd_create": 319, "memfd_secret": 447,
    },
    "aarch64": {
        "socket": 198, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "process_madvise": 440,
        "pidfd_getfd": 438, "kcmp": 272, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
        "pivot_root": 41, "chroot": 51, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "keyctl": 219, "add_key": 217, "request_key": 218, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106, "swapon": 224,
        "swapoff": 225, "reboot": 142, "acct": 89, "quotactl": 60, "syslog": 116, "clone": 220, "clone3": 435,
        "memfd_create": 279, "memfd_secret": 447,
    },
}
# classic BPF opcodes and seccomp return values
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_KILL_PROCESS, RET_ALLOW, RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
EPERM, ENOSYS = 1, 38
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
# Landlock
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
RULE_PATH_BENEATH = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR, REMOVE_DIR, REMOVE_FILE = 1, 2, 4, 8, 16, 32
MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 64, 128, 256, 512, 1024, 2048, 4096
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_FIFO | MAKE_SYM | REFER
         | TRUNCATE)
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
DEVICES = {"/dev/null": READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV, "/dev/zero": READ_FILE | IOCTL_DEV,
           "/dev/urandom": READ_FILE | IOCTL_DEV, "/dev/random": READ_FILE | IOCTL_DEV}
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin")
SKIP_IN_VIEW = {"site-packages", "dist-packages", "test", "tests", "idle_test", "idlelib", "tkinter", "turtledemo",
                "ensurepip", "lib2to3", "pydoc_data", "__phello__"}

libc = ctypes.CDLL(None, use_errno=True)


def _fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


# ---------------------------------------------------------------------------------------------
# seccomp
# ---------------------------------------------------------------------------------------------

class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


def seccomp_program(arch: str = ARCH) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions; jumps to the shared ALLOW/DENY/ENOSYS returns at its end."""
    if arch not in SYSCALLS:
        raise OSError(f"no seccomp syscall table for {arch} (x86_64 and aarch64 are known)")
    nrs = SYSCALLS[arch]
    # (code, jt label or offset, jf label or offset, k); labels resolve to the returns at the end
    body: list[tuple[int, object, object, int]] = [
        (LD_W_ABS, 0, 0, 4), (JEQ_K, 1, 0, AUDIT_ARCH[arch]), (RET_K, 0, 0, RET_KILL_PROCESS), (LD_W_ABS, 0, 0, 0),
    ]
    if arch == "x86_64":
        body.append((JGE_K, "deny", 0, X32_SYSCALL_BIT))
    body += [(JEQ_K, "deny", 0, nrs[name]) for name in DENIED]
    body += [(JEQ_K, "enosys", 0, nrs["clone3"]), (JEQ_K, 0, "allow", nrs["clone"]),
             (LD_W_ABS, 0, 0, 16), (JSET_K, "deny", "allow", CLONE_NEW_MASK)]  # clone's flags: args[0], low word
    labels = {"allow": len(body), "deny": len(body) + 1, "enosys": len(body) + 2}
    tail = [(RET_K, 0, 0, RET_ALLOW), (RET_K, 0, 0, RET_ERRNO | EPERM), (RET_K, 0, 0, RET_ERRNO | ENOSYS)]

    def offset(i: int, target: object) -> int:
        return labels[target] - i - 1 if isinstance(target, str) else int(target)  # type: ignore[call-overload]

    return [(code, offset(i, jt), offset(i, jf), k) for i, (code, jt, jf, k) in enumerate(body)] + tail


def no_new_privs() -> None:
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)):
        raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")


def install_seccomp() -> None:
    """Load the filter into this process (and everything it starts); needs no_new_privs first."""
    insns = seccomp_program()
    array = (_Insn * len(insns))(*[_Insn(*insn) for insn in insns])
    prog = _Prog(len(insns), array)
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)):
        raise _fail("prctl(PR_SET_SECCOMP)")


# ---------------------------------------------------------------------------------------------
# Landlock
# ---------------------------------------------------------------------------------------------

class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    for needed, right in ((2, REFER), (3, TRUNCATE), (5, IOCTL_DEV)):
        if abi >= needed:
            rights |= right
    return rights


def landlock_ruleset(read_dirs: list[str], work: str, abi: int) -> int:
    """A ruleset fd: read/execute beneath ``read_dirs``, everything but devices and sockets beneath ``work``,
    the harmless devices; every other file access, TCP bind/connect (ABI 4) and signals or abstract sockets
    outside the domain (ABI 6) denied."""
    handled = fs_rights(abi)
    attr = _RulesetAttr(handled, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    fd = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise _fail("landlock_create_ruleset")
    rules = [(d, READ) for d in read_dirs] + [(work, WRITE)] + list(DEVICES.items())
    for path, access in rules:
        if not os.path.exists(path):
            continue
        parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            rule = _PathBeneath(access & handled, parent)
            if libc.syscall(SYS_ADD_RULE, fd, RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)):
                raise _fail(f"landlock_add_rule {path}")
        finally:
            os.close(parent)
    return fd


def landlock_abi_or_reason() -> int:
    """The Landlock ABI version; OSError naming why when there is none."""
    abi = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # ..._VERSION
    if abi > 0:
        return abi
    err = ctypes.get_errno()
    why = {38: "this kernel has no Landlock (ENOSYS), or a seccomp filter hides it",
           95: "Landlock is built in but not enabled at boot (EOPNOTSUPP: add landlock to the lsm= list)"}
    raise OSError(err, "Landlock is not available: " + why.get(err, os.strerror(err)))


def landlock_restrict(fd: int) -> None:
    """Enter the ruleset's domain for good (needs no_new_privs); closes the fd."""
    try:
        if libc.syscall(SYS_RESTRICT_SELF, fd, ctypes.c_uint32(0)):
            raise _fail("landlock_restrict_self")
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# uids: one per zygote, every process of it killed at the end
# ---------------------------------------------------------------------------------------------

def become(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def claim_uid() -> tuple[int, socket.socket]:
    """The first free uid of the range; the returned socket holds it (an abstract name, gone with its holder).
    Whatever a dead earlier holder left running under it is killed first."""
    for uid in range(UID_BASE, UID_BASE + UID_SLOTS):
        lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            lock.bind("\0" + LOCK_PREFIX + str(uid))
        except OSError:
            lock.close()
            continue
        kill_uid(uid)
        return uid, lock
    raise OSError(f"all {UID_SLOTS} sandbox uids ({UID_BASE}..) are taken by running sandboxes")


def uid_processes(uid: int) -> list[int]:
    """Live (not zombie) processes any of whose uids is ``uid``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except (OSError, ValueError):
            continue
        uids = fields.get("Uid", "").split()
        if str(uid) in uids and not fields.get("State", "").strip().startswith(("Z", "X")):
            found.append(int(name))
    return found


def _signal_all_as(uid: int) -> None:
    """kill(-1, SIGKILL) from a helper that has become ``uid``: the kernel reaches every process of it at once."""
    pid = os.fork()
    if pid == 0:
        try:
            become(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def reap() -> None:
    """Collect every finished child (this process is the subreaper of the programs' detached processes)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_uid(uid: int, timeout_s: float = 15.0) -> bool:
    """Kill every process of ``uid`` until none is left (a loaded machine may need seconds); True when none is."""
    deadline = time.monotonic() + timeout_s
    while True:
        _signal_all_as(uid)
        reap()
        if not uid_processes(uid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


# ---------------------------------------------------------------------------------------------
# the Python library, where the program's uid can read it
# ---------------------------------------------------------------------------------------------

def readable_by_others(path: str) -> bool:
    """Can an unrelated uid reach and list ``path`` (every folder above it searchable by others)?"""
    path = os.path.realpath(path)
    try:
        mode = os.stat(path).st_mode
        if not (mode & stat.S_IROTH and mode & stat.S_IXOTH):
            return False
        parent = os.path.dirname(path)
        while True:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
            if parent == "/":
                return True
            parent = os.path.dirname(parent)
    except OSError:
        return False


def _copy_tree(src: str, dst: str) -> None:
    """Hard links where the filesystem allows (no copy, same modes), else copies; skips tests and tools."""
    for folder, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in SKIP_IN_VIEW and not d.startswith("config-")]
        target = os.path.join(dst, os.path.relpath(folder, src))
        os.makedirs(target, mode=0o755, exist_ok=True)
        os.chmod(target, 0o755)
        for name in files:
            source = os.path.join(folder, name)
            if not os.path.isfile(source) or not os.stat(source).st_mode & stat.S_IROTH:
                continue
            try:
                os.link(source, os.path.join(target, name), follow_symlinks=True)
            except OSError:
                shutil.copy2(source, os.path.join(target, name))


def map_path(view: dict[str, str], path: str) -> str | None:
    """Where the program's uid finds import folder ``path``: itself when others can read it, its copy in
    ``view`` (made by ``python_view``), or None (a folder it cannot use)."""
    for orig, copy in view.items():
        if path == orig or path.startswith(orig.rstrip("/") + "/"):
            return copy + path[len(orig):]
    return path if os.path.isdir(path) and readable_by_others(path) else None


def shared_tmp() -> str:
    """A temporary folder others can reach (a private TMPDIR would hide the library view from the programs)."""
    import tempfile

    for folder in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(folder) and os.access(folder, os.W_OK) and readable_by_others(folder):
            return folder
    raise OSError("no temporary folder that other uids can reach (/tmp is missing or private)")


def python_view(paths: list[str], scratch: str) -> dict[str, str]:
    """For each import folder the program's uid cannot reach (a Python under /root, say), a readable copy under
    ``scratch``: {original: readable path}. Folders others can already read map to themselves."""
    view: dict[str, str] = {}
    for path in paths:
        if not os.path.isdir(path):
            continue
        if readable_by_others(path):
            view[path] = path
            continue
        inside = next((orig for orig in view if path.startswith(orig.rstrip("/") + "/")), None)
        if inside is not None:  # lib-dynload below the standard library: already copied with it
            view[path] = view[inside] + path[len(inside):]
            continue
        target = os.path.join(scratch, f"python-{len(view)}")
        _copy_tree(path, target)
        view[path] = target
    os.chmod(scratch, 0o755)
    return view
