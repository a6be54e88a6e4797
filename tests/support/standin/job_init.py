"""The init program of one stand-in job: its own filesystem view, no namespaces for it, then execve.

Run by the stand-in as ``python -I job_init.py SPEC_JSON STATUS_FD`` in a new session, with the job's
environment (its ``environment``, its secrets, HF_ENDPOINT, PATH, HOME) as its own. The spec file holds no
secret: the command, the names of the environment variables to pass on, the folder to build the root in,
the host paths to re-bind and the volumes. Steps, as a container runtime does them:

1. ``unshare(CLONE_NEWNS)`` (not root: with ``CLONE_NEWUSER``, mapping this user to root in it) and make
   every mount private (nothing done here reaches the host);
2. a tmpfs as the new root; every top-level folder of the host ``/`` in it, as a private writable layer
   (overlayfs over the host folder, its upper layer on a tmpfs of the job: the job can write anywhere, as in
   a container, and the host never sees it; a read-only recursive bind where overlayfs cannot), except
   /tmp and /root (fresh, empty, per job) and /proc, /dev, /sys (bound recursively from the host);
3. the host paths the test Python needs that live under /tmp or /root (its prefixes, the repo) at the same
   path, the same way; the stand-in's ``/.standin`` folders; each volume bound at its mount path
   (read-only remounted where asked);
4. ``chroot``, ``chdir`` to the workdir, a seccomp filter (``unshare``/``setns`` and ``clone`` with a
   CLONE_NEW* flag → EPERM, ``clone3`` → ENOSYS, as Docker's default profile does for an unprivileged
   container), then ``execve`` of the command with exactly the job's environment.

When anything fails before the command runs (an ``execve`` that answers E2BIG, a missing program), the
reason goes to STATUS_FD (close-on-exec, so a successful execve leaves it empty) and to stderr (the logs).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
CLONE_NEW_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_NOATIME, MS_NODIRATIME = 1, 2, 4, 8, 32, 1024, 2048
MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME, ST_RELATIME = 4096, 16384, 1 << 18, 1 << 21, 4096
MAX_ARG_STRLEN = 131072

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def mount(source: str | None, target: str, fstype: str | None = None, flags: int = 0, data: str | None = None):
    enc = (lambda s: s.encode() if s is not None else None)
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source} on {target}")


def remount_read_only(target: str) -> None:
    """Read-only, keeping the flags the mount already has (in a user namespace they are locked)."""
    kept = os.statvfs(target).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    relatime = MS_RELATIME if os.statvfs(target).f_flag & ST_RELATIME else 0
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept | relatime)


def bind(source: str, target: str, read_only: bool = False) -> None:
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        remount_read_only(target)


def enter_namespaces(user_namespace: bool) -> None:
    """A mount namespace; not root: first a user namespace in which this user is root (mounts need it)."""
    if not user_namespace:
        return _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _mount_point(root: str, path: str, is_dir: bool) -> str:
    """Create ``path`` inside the new root without ever creating anything in a host folder bound into it."""
    target = root + path
    first = path.strip("/").split("/")[0]
    if first and first not in ("tmp", "root", ".standin") and os.path.isdir("/" + first) and \
            not os.path.lexists(target):
        raise OSError(errno.EROFS, f"cannot create the mount point {path}: /{first} comes from the image "
                                   "(mount volumes at a new top-level path, or under /tmp or /root)")
    if is_dir:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    return target


def _has_submounts(path: str) -> bool:
    with open("/proc/self/mountinfo") as handle:
        return any(line.split()[4].startswith(path.rstrip("/") + "/") for line in handle)


def image_layer(host: str, target: str, layers: str) -> None:
    """A private, writable view of a host folder, as a container's image layer is: overlayfs whose upper layer
    lives on the job's own tmpfs (writes never reach the host). A read-only bind where overlayfs cannot
    (a folder with mounts below it, a path overlayfs options cannot spell)."""
    if not _has_submounts(host) and not any(c in host for c in ",:\\"):
        layer = f"{layers}/{len(os.listdir(layers))}"
        os.makedirs(layer + "/upper")
        os.makedirs(layer + "/work")
        try:
            options = f"lowerdir={host},upperdir={layer}/upper,workdir={layer}/work"
            return mount("overlay", target, "overlay", 0, options)
        except OSError:
            pass
    bind(host, target, read_only=True)


def build_root(spec: dict) -> str:
    root, layers = spec["root"], spec["layers"]
    enter_namespaces(spec.get("user_namespace", os.geteuid() != 0))
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    mount("tmpfs", layers, "tmpfs", 0, "mode=0700")  # upper layers: outside the new root, gone with the job
    for name in sorted(os.listdir("/")):
        host = "/" + name
        if name in ("tmp", "root"):
            continue
        if os.path.islink(host):
            os.symlink(os.readlink(host), root + host)
        elif name in ("proc", "dev", "sys"):
            os.mkdir(root + host)
            bind(host, root + host)
        elif os.path.isdir(host):
            os.mkdir(root + host)
            image_layer(host, root + host, layers)
        elif os.path.isfile(host):
            open(root + host, "w").close()
            mount(host, root + host, None, MS_BIND)
            remount_read_only(root + host)
    os.mkdir(root + "/tmp")
    os.chmod(root + "/tmp", 0o1777)
    os.mkdir(root + "/root", 0o700)
    for path in spec["binds"]:  # host paths under /tmp or /root the test Python needs, at the same path
        if os.path.isdir(path):
            image_layer(path, _mount_point(root, path, True), layers)
    for volume in spec["mounts"]:
        bind(volume["source"], _mount_point(root, volume["target"], True), volume["readOnly"])
    return root


def seccomp_filter():
    import pyseccomp as seccomp  # loaded before the chroot

    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "unshare")
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "setns")
    for flag in CLONE_NEW_FLAGS:  # clone(flags, ...) on x86-64 / arm64: flags is argument 0
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # glibc and Python fall back to clone
    return rules


def fail(status_fd: int, message: str, code: int) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    os.write(status_fd, message.encode())
    os._exit(code)


def exec_command(command: list[str], env: dict, status_fd: int) -> None:
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        hint = ""
        if exc.errno == errno.E2BIG:
            longest = max(len(a.encode()) for a in command)
            hint = (f" (its longest argument is {longest} bytes; execve takes at most {MAX_ARG_STRLEN} bytes "
                    "per argument and ARG_MAX for all arguments and the environment together)")
        fail(status_fd, f'the job\'s command could not be started: exec "{command[0]}": {why}{hint}',
             127 if exc.errno == errno.ENOENT else 126)


def main() -> None:
    spec_path, status_fd = sys.argv[1], int(sys.argv[2])
    os.set_inheritable(status_fd, False)
    with open(spec_path) as handle:
        spec = json.load(handle)
    env = {key: os.environ[key] for key in spec["env_keys"] if key in os.environ}
    try:
        rules = seccomp_filter()
        root = build_root(spec)
        os.chroot(root)
        os.chdir(spec["workdir"])
        rules.load()
    except Exception as exc:  # noqa: BLE001 — any setup failure ends the job before its command runs
        fail(status_fd, f"the job's container could not be set up: {exc}", 125)
    if not spec["command"]:
        fail(status_fd, "the job has an empty command", 125)
    exec_command(spec["command"], env, status_fd)


if __name__ == "__main__":
    main()
