"""The sandbox contains escapes and scores them as failures; canonical solutions pass; wrong ones fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.problems import canonical_program, fenced, load_problems, program_for
from mcp_server.evals.kit.sandbox import Limits, Sandbox, probe

LIMITS = Limits(timeout_s=3.0, memory_mb=256, max_pids=32)


@pytest.fixture(scope="module")
def box():
    with Sandbox("namespaces", workers=2, limits=LIMITS) as sandbox:
        yield sandbox


def test_the_machine_supports_the_namespace_sandbox():
    ok, reason = probe("namespaces")
    assert ok, reason


def test_the_program_sees_an_empty_environment_and_a_private_work_dir(box):
    result = box.run("import os, json; print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), "
                     "'uid': os.getuid(), 'root': sorted(os.listdir('/'))}))")
    assert result.passed, result.output
    seen = json.loads(result.output)
    assert seen["env"] == {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/work", "TMPDIR": "/work",
                           "LANG": "C.UTF-8"}
    assert seen["cwd"] == "/work" and seen["uid"] == 65534
    assert "home" not in seen["root"] and "tmp" in seen["root"]


def test_a_socket_cannot_reach_anything(box):
    result = box.run("import socket\ns = socket.create_connection(('1.1.1.1', 443), timeout=2)\nprint('connected')")
    assert result.status == "failed" and "connected" not in result.output
    assert "unreachable" in result.output.lower() or "OSError" in result.output


def test_writes_outside_the_work_dir_fail_and_the_work_dir_is_fresh(box, tmp_path):
    target = tmp_path / "escaped.txt"
    for path in (str(target), "/usr/escaped.txt", "/escaped.txt", os.path.join(sys.base_prefix, "escaped.txt")):
        result = box.run(f"open({path!r}, 'w').write('x')")
        assert result.status == "failed", (path, result.output)
    assert not target.exists()
    assert box.run("open('/work/note.txt', 'w').write('x')").passed
    assert box.run("import os\nassert not os.path.exists('/work/note.txt')").passed  # nothing carries over


def test_an_infinite_loop_times_out(box):
    result = box.run("while True:\n    pass", Limits(timeout_s=1.0))
    assert result.status == "timeout" and not result.passed
    assert result.duration_s < 5


def test_memory_bombs_are_stopped(box):
    single = box.run("x = bytearray(2 * 1024 ** 3)\nprint('allocated')")  # one process: RLIMIT_AS
    assert single.status == "failed" and "MemoryError" in single.output
    # many processes each under RLIMIT_AS but together over the cgroup's memory limit
    spread = box.run(
        "import os, time\n"
        "for _ in range(6):\n"
        "    if os.fork() == 0:\n"
        "        block = bytearray(200 * 1024 ** 2)\n"
        "        for i in range(0, len(block), 4096): block[i] = 1\n"
        "        time.sleep(5); os._exit(0)\n"
        "ok = 0\n"
        "for _ in range(6):\n"
        "    _, status = os.wait(); ok += os.waitstatus_to_exitcode(status) == 0\n"
        "print('children ok', ok)\n"
        "raise SystemExit(0 if ok == 6 else 1)",
        Limits(timeout_s=10, memory_mb=256, max_pids=32),
    )
    assert not spread.passed, spread.output
    assert spread.oom or spread.status == "timeout", spread


def test_planted_secrets_are_invisible(monkeypatch, tmp_path):
    hf_home = tmp_path / "hf-home"
    hf_home.mkdir()
    (hf_home / "token").write_text("hf_plantedfiletoken123")
    monkeypatch.setenv("HF_TOKEN", "hf_plantedenvtoken456")
    monkeypatch.setenv("HF_HOME", str(hf_home))
    with Sandbox("namespaces", workers=1, limits=LIMITS) as fresh:  # started while the secrets are set
        env = fresh.run("import os\nprint(os.environ.get('HF_TOKEN'))\nprint(open('/proc/1/environ','rb').read())")
        assert "hf_plantedenvtoken456" not in env.output
        stolen = fresh.run(f"print(open({str(hf_home / 'token')!r}).read())")
        assert stolen.status == "failed" and "hf_plantedfiletoken123" not in stolen.output
        walk = fresh.run("import os\nfor d, _, fs in os.walk('/'):\n"
                         "    for f in fs:\n"
                         "        if f == 'token': print(os.path.join(d, f))")
        assert str(hf_home) not in walk.output


def test_a_fork_bomb_is_capped_far_below_its_own_stop(box):
    bomb = (
        "import os, time\n"
        "made = 0\n"
        "for _ in range(2000):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(60); os._exit(0)\n"
        "    made += 1\n"
        "print('forked', made, flush=True)\n"
        "raise SystemExit(0 if made >= 2000 else 1)"
    )
    result = box.run(bomb)
    forked = int(result.output.split("forked", 1)[1].split()[0])
    assert result.status == "failed"
    assert forked < LIMITS.max_pids <= 64  # capped by the pids cgroup, nowhere near 2,000
    assert result.peak_pids is not None and result.peak_pids <= LIMITS.max_pids
    # and nothing of it survives: the next program starts in a clean cgroup
    assert box.run("print('after the bomb')").passed


def test_all_humaneval_canonical_solutions_pass_and_wrong_ones_fail(box):
    problems = load_problems("humaneval")
    assert len(problems) == 164
    passed = box.run_many([canonical_program(p) for p in problems], Limits(timeout_s=10))
    assert [p.id for p, r in zip(problems, passed) if not r.passed] == []
    wrong = box.run_many([program_for(p, fenced(f"def {p.entry_point}(*args, **kwargs):\n    return None"))
                          for p in problems[:40]], Limits(timeout_s=10))
    assert not any(r.passed for r in wrong)


def test_unsafe_host_mode_runs_unisolated_but_still_cleans_the_environment(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_plantedenvtoken789")
    with Sandbox("unsafe-host", workers=1, limits=LIMITS) as host:
        assert not host.isolated
        result = host.run("import os\nprint(sorted(os.environ), os.environ.get('HF_TOKEN'))")
        assert result.passed and "hf_plantedenvtoken789" not in result.output
        assert host.run("while True: pass", Limits(timeout_s=1)).status == "timeout"


def test_without_privileges_the_sandbox_refuses_with_the_fix(tmp_path):
    """Without CAP_SYS_ADMIN (dropped from the bounding set, as in an unprivileged container) the
    sandbox cannot create namespaces: start refuses and names the unsafe-host option."""
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.prctl(24, 21, 0, 0, 0) == 0  # PR_CAPBSET_DROP CAP_SYS_ADMIN\n"
        "from mcp_server.evals.kit.sandbox import Sandbox, probe\n"
        "from mcp_server.evals.kit.errors import KitError\n"
        "print('PROBE', probe('namespaces'))\n"
        "try:\n"
        "    Sandbox('namespaces', workers=1).start()\n"
        "except KitError as exc:\n"
        "    print('REFUSED', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert "REFUSED" in out.stdout, out.stdout + out.stderr
    assert "unsafe-host" in out.stdout and "PROBE (False" in out.stdout


def test_unknown_modes_are_refused():
    with pytest.raises(KitError, match="Unknown sandbox mode"):
        Sandbox("chroot")
