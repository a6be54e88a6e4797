"""Attacks of generated code on the machine it runs on, and the driver that runs them where namespaces are gone.

    python tests/support/sandbox_attacks.py MODE     # prints one JSON line: what each attack achieved

The driver first loads the Jobs stand-in's seccomp filter into itself (``unshare``/``setns`` and ``clone``
with a CLONE_NEW* flag answer EPERM, as in an HF Jobs container), so neither it nor anything it starts can
make a namespace. It plants an HF token in its own environment and in a world-readable token file, opens a
TCP, a UDP and a world-writable unix socket on loopback, starts a victim process and makes a world-writable
folder; then it starts a ``Sandbox(MODE)`` and runs each attack program, and reports per attack whether it
got through. ``ATTACKS`` and ``got_through`` are plain functions so the same programs can be aimed at any
sandbox build.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
TOKEN_PREFIX = "hf_plantedSandboxToken"
NAMES = (
    "token from another process's environ or a token file", "loopback connect",
    "write outside the work folder (/etc, a world-writable folder)", "ptrace, process_vm_readv or kill another process",
    "a detached double-forked child left running", "a forged 'passed' reply on the sandbox's own pipe",
)


def world(tmp: str) -> dict:
    """The things an attack aims at, made by the driver (root, outside the sandbox)."""
    token_dir = os.path.join(tmp, "hf-home")
    os.makedirs(token_dir, mode=0o755)
    token_file = os.path.join(token_dir, "token")
    Path(token_file).write_text(os.environ["HF_TOKEN"])
    os.chmod(token_file, 0o644)
    open_dir = os.path.join(tmp, "open")
    os.makedirs(open_dir)
    os.chmod(open_dir, 0o1777)
    os.chmod(tmp, 0o755)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix_path = os.path.join(open_dir, "listener.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(unix_path)
    os.chmod(unix_path, 0o777)
    unix.listen(4)
    for s in (tcp, udp, unix):
        s.settimeout(0.2)
    victim = subprocess.Popen(["sleep", "120"])
    return {"driver": os.getpid(), "victim": victim.pid, "token_file": token_file, "open_dir": open_dir,
            "etc_file": f"/etc/tunepack-escape-{secrets.token_hex(4)}", "tcp": tcp.getsockname()[1],
            "udp": udp.getsockname()[1], "unix": unix_path, "_sockets": (tcp, udp, unix), "_victim": victim}


def ATTACKS(w: dict) -> dict[str, str]:  # noqa: N802 - a table of programs
    return {
        "token from another process's environ or a token file": f"""
import os, json
found = []
pids = [{w['driver']}, os.getppid(), 1]
try:
    pids += [int(p) for p in os.listdir('/proc') if p.isdigit()]
except OSError:
    pass
for pid in pids:
    for name in ('environ', 'cmdline'):
        try:
            if b'{TOKEN_PREFIX}' in open(f'/proc/{{pid}}/{{name}}', 'rb').read():
                found.append(f'{{pid}}/{{name}}')
        except OSError:
            pass
try:
    if '{TOKEN_PREFIX}' in open({w['token_file']!r}).read():
        found.append('token file')
except OSError:
    pass
if '{TOKEN_PREFIX}' in str(dict(os.environ)):
    found.append('own environment')
print(json.dumps(found))
""",
        "loopback connect": f"""
import socket, json
done = []
for family, kind, address in ((socket.AF_INET, socket.SOCK_STREAM, ('127.0.0.1', {w['tcp']})),
                              (socket.AF_UNIX, socket.SOCK_STREAM, {w['unix']!r})):
    try:
        s = socket.socket(family, kind)
        s.settimeout(1)
        s.connect(address)
        s.send(b'x')
        done.append(str(address))
    except OSError as exc:
        pass
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {w['udp']}))
    done.append('udp')
except OSError:
    pass
print(json.dumps(done))
""",
        "write outside the work folder (/etc, a world-writable folder)": f"""
import os, json
done = []
for path in ({w['etc_file']!r}, {w['open_dir']!r} + '/escaped', '/tmp/tunepack-escaped-' + str(os.getpid()),
             '/dev/shm/tunepack-escaped-' + str(os.getpid())):
    try:
        with open(path, 'w') as fh:
            fh.write('x')
        done.append(path)
    except OSError:
        pass
try:
    os.symlink({w['open_dir']!r} + '/via-link', 'link')
    open('link', 'w').write('x')
    done.append('via a symlink')
except OSError:
    pass
print(json.dumps(done))
""",
        "ptrace, process_vm_readv or kill another process": f"""
import ctypes, json, os, signal
libc = ctypes.CDLL(None, use_errno=True)
done = []
victim, driver = {w['victim']}, {w['driver']}
if libc.ptrace(16, victim, 0, 0) == 0:  # PTRACE_ATTACH
    done.append('ptrace attach')
class IoVec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
buf = ctypes.create_string_buffer(64)
local, remote = IoVec(ctypes.cast(buf, ctypes.c_void_p), 64), IoVec(0x400000, 64)
if libc.process_vm_readv(victim, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) > 0:
    done.append('process_vm_readv')
for name, pid in (('driver', driver), ('zygote', os.getppid())):
    try:
        os.kill(pid, 0)
        done.append('may signal the ' + name)
    except OSError:
        pass
try:
    os.kill(victim, signal.SIGKILL)
    done.append('killed the victim')
except OSError:
    pass
print(json.dumps(done))
""",
        "a detached double-forked child left running": """
import os, time, json
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        for _ in range(20):  # a few more, detached too
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.close(w)
print(json.dumps([int(os.read(r, 32))]))
""",
        "a forged 'passed' reply on the sandbox's own pipe": """
import json, os
fake = json.dumps({'status': 'passed', 'exit_code': 0, 'output': 'forged', 'duration_s': 0}) + '\\n'
done = []
for fd in range(0, 8):
    try:
        out = os.open(f'/proc/{os.getppid()}/fd/{fd}', os.O_WRONLY)
        os.write(out, fake.encode())
        done.append(fd)
    except OSError:
        pass
print(json.dumps(done))
raise SystemExit(1)  # a failing program: only a forged reply makes it pass
""",
    }


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "State:\tZ" not in fh.read()
    except OSError:
        return False


def _received(w: dict) -> bool:
    tcp, udp, unix = w["_sockets"]
    for s in (tcp, unix):
        try:
            s.accept()
            return True
        except OSError:
            pass
    try:
        udp.recvfrom(16)
        return True
    except OSError:
        return False


def got_through(name: str, result, w: dict, after) -> bool:
    """Did the attack achieve anything? ``after`` runs a harmless program (None when the sandbox broke)."""
    claimed = _claims(result.output)
    if name.startswith("token"):
        return bool(claimed) or TOKEN_PREFIX in result.output
    if name == "loopback connect":
        return bool(claimed) or _received(w)
    if name.startswith("write outside"):
        escaped = [w["etc_file"], os.path.join(w["open_dir"], "escaped"), os.path.join(w["open_dir"], "via-link")]
        return bool(claimed) or any(os.path.exists(p) for p in escaped)
    if name.startswith("ptrace"):
        return bool(claimed) or w["_victim"].poll() is not None
    if name.startswith("a detached"):
        time.sleep(0.2)
        return any(_alive(pid) for pid in claimed or []) or bool(_uid_processes())
    if name.startswith("a forged"):
        return result.status == "passed" or after is None or "after" not in after.output
    raise KeyError(name)


def _claims(output: str) -> list:
    for line in reversed(output.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, list):
            return value
    return []


def _uid_processes() -> list[int]:
    from mcp_server.evals.kit import confine

    return [pid for uid in range(confine.UID_BASE, confine.UID_BASE + confine.UID_SLOTS)
            for pid in confine.uid_processes(uid)]


def block_namespaces() -> None:
    sys.path.insert(0, str(TESTS))
    from support.standin.job_init import seccomp_filter

    seccomp_filter().load()


def main(mode: str) -> dict:
    block_namespaces()
    from mcp_server.evals.kit import probe, verdict
    from mcp_server.evals.kit.problems import canonical_program, fenced, load_problems
    from mcp_server.evals.kit.sandbox import Limits, Sandbox
    from mcp_server.evals.kit.sandbox import probe as mode_works
    from support.forgeries import FORGERIES, HONEST

    out: dict = {"unshare": probe.sandbox_namespaces(), "facts": probe.sandbox_facts()}
    out["namespaces_ok"], out["namespaces_probe"] = mode_works("namespaces")
    with tempfile.TemporaryDirectory() as tmp:
        w = world(tmp)
        started = time.monotonic()
        with Sandbox(mode, workers=2, limits=Limits(timeout_s=5)) as box:
            out["mode"], out["start_s"] = box.mode, round(time.monotonic() - started, 2)
            env = box.run("import os, json; print(json.dumps([dict(os.environ), os.getuid(), os.getcwd()]))")
            out["program_env"] = json.loads(env.output)
            out["attacks"] = {}
            attacks = ATTACKS(w)
            assert tuple(attacks) == NAMES, "NAMES lists the attacks"
            for name, code in attacks.items():
                result = box.run(code)
                after = box.run("print('after')") if name.startswith("a forged") else None
                out["attacks"][name] = {"got_through": got_through(name, result, w, after), "status": result.status,
                                        "output": result.output[-400:]}
            out["limits"] = {
                "forks": box.run("import os, time\nn = 0\nwhile n < 500:\n    try:\n        pid = os.fork()\n"
                                 "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n"
                                 "        os._exit(0)\n    n += 1\nprint(n)").output.strip(),
                "memory": box.run("x = bytearray(2 * 1024 ** 3)").output[-200:],
                "loop": box.run("while True:\n    pass", Limits(timeout_s=1)).status,
                # anonymous memory files are counted by no rlimit (there is no memory cgroup here): refused
                "memfd": box.run("import os\ntry:\n    fd = os.memfd_create('hold')\n    os.ftruncate(fd, 64 << 20)\n"
                                 "    print('created')\nexcept OSError as exc:\n    print(type(exc).__name__)").output,
            }
            # files of 8 MB (under RLIMIT_FSIZE) until the disk fills: the watchdog stops it past work_mb
            disk = box.run("import os\nblock = b'x' * (8 << 20)\nfor i in range(200):\n"
                           "    with open(f'f{i}', 'wb') as fh:\n        fh.write(block)\n    print(i, flush=True)",
                           Limits(timeout_s=60, work_mb=64))
            out["limits"]["disk"] = {"status": disk.status, "files": len(disk.output.split()) - 1,
                                     "output": disk.output[-300:]}
            humaneval = {p.id: p for p in load_problems("humaneval", limit=40)}
            humaneval.update({p.id: p for p in load_problems("humaneval", ids=["HumanEval/32", "HumanEval/38"])})
            out["forgeries"] = {}
            for name, (pid, answer) in FORGERIES.items():
                v = verdict.score(box, humaneval[pid], answer)
                out["forgeries"][name] = {"passed": v.passed, "reason": v.reason}
            out["honest"] = {pid: verdict.score(box, humaneval[pid], answer).passed for pid, answer in HONEST.items()}
            canon = [p for p in humaneval.values()][:40]
            out["canonical_failed"] = [p.id for p in canon
                                       if not verdict.score(box, p, fenced(p.text + p.solution)).passed]
            out["legacy_canonical_failed"] = [p.id for p in canon[:5] if not box.run(canonical_program(p)).passed]
        out["left_after_close"] = _uid_processes()
        w["_victim"].kill()
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    print(json.dumps(main(sys.argv[1])))
