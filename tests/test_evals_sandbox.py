"""The sandbox contains escapes and scores them as failures; canonical solutions pass; wrong ones fail; the
verdict is decided outside the answer's process. The confined mode's attacks (where namespaces are blocked)
are in tests/reliability/test_sandbox_attacks.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mcp_server.evals.kit import confine, harness, verdict
from mcp_server.evals.kit.errors import KitError
from mcp_server.evals.kit.problems import fenced, load_problems
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
    # anonymous memory files (memfd, each under RLIMIT_FSIZE) are charged to the cgroup too: 750 MB never fit
    held = box.run("import os\nfds = []\nfor i in range(50):\n    fd = os.memfd_create(str(i))\n"
                   "    os.pwrite(fd, b'x' * (15 << 20), 0)\n    fds.append(fd)\nprint('held', 15 * len(fds), 'MB')",
                   Limits(timeout_s=20, memory_mb=512))
    assert held.oom and "held" not in held.output, held


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
    with ThreadPoolExecutor(box.workers) as pool:
        passed = list(pool.map(lambda p: verdict.score(box, p, fenced(p.text + p.solution), Limits(timeout_s=10)),
                               problems))
        wrong = list(pool.map(lambda p: verdict.score(box, p, fenced(f"def {p.entry_point}(*args, **kwargs):\n"
                                                                      "    return None"), Limits(timeout_s=10)),
                              problems[:40]))
    assert [p.id for p, v in zip(problems, passed, strict=True) if not v.passed] == []
    assert not any(v.passed for v in wrong)
    decided = [v.decided for v in passed]  # most HumanEval checks split into values judged here
    assert decided.count("values") >= 150 and decided.count("proof") <= 9


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
    assert "sandbox: confined" in out.stdout and "PROBE (False" in out.stdout


def test_unknown_modes_are_refused():
    with pytest.raises(KitError, match="Unknown sandbox mode"):
        Sandbox("chroot")


# ---------------------------------------------------------------------------------------------
# confined mode: its refusals, its seccomp program
# ---------------------------------------------------------------------------------------------

REFUSALS = r"""
import ctypes, errno, sys
how = sys.argv[1]
if how == "no-setuid":  # as a container without CAP_SETUID: dropped from the bounding set, the zygote lacks it
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(24, 7, 0, 0, 0) == 0  # PR_CAPBSET_DROP CAP_SETUID
else:  # no namespaces (the Jobs stand-in's filter), and a kernel without Landlock or without seccomp filters
    from support.standin.job_init import seccomp_filter
    import pyseccomp
    rules = seccomp_filter()
    if how == "no-landlock":
        rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "landlock_create_ruleset")
    else:
        rules.add_rule(pyseccomp.ERRNO(errno.EINVAL), "prctl", pyseccomp.Arg(0, pyseccomp.EQ, 22))  # PR_SET_SECCOMP
        rules.add_rule(pyseccomp.ERRNO(errno.EINVAL), "seccomp")
    rules.load()
from mcp_server.evals.kit.sandbox import Sandbox
from mcp_server.evals.kit.errors import KitError
for mode in ("confined", "auto"):
    try:
        Sandbox(mode, workers=1).start().close()
        print("STARTED", mode)
    except KitError as exc:
        print("REFUSED", mode, exc)
"""


def _refusals(how: str, tmp_path) -> str:
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": f"{tests.parent}{os.pathsep}{tests}"}
    out = subprocess.run([sys.executable, "-c", REFUSALS, how], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_confined_refuses_without_the_uid_switch_and_names_why(tmp_path):
    out = _refusals("no-setuid", tmp_path)
    assert "REFUSED confined" in out and "cannot switch to the sandbox uid" in out, out
    auto = next(line for line in out.splitlines() if line.startswith("REFUSED auto"))  # namespaces switch uids too
    namespaces, confined = auto.split(" confined: ", 1)
    assert "Operation not permitted" in namespaces and "cannot switch to the sandbox uid" in confined


def test_confined_and_auto_refuse_without_landlock_and_name_why(tmp_path):
    pytest.importorskip("pyseccomp")
    out = _refusals("no-landlock", tmp_path)
    assert "REFUSED confined" in out and "Landlock is not available" in out, out
    auto = next(line for line in out.splitlines() if line.startswith("REFUSED auto"))
    assert "namespaces:" in auto and "unshare" in auto and "Landlock" in auto


def test_confined_refuses_without_seccomp_filters_and_names_why(tmp_path):
    pytest.importorskip("pyseccomp")
    out = _refusals("no-seccomp", tmp_path)
    assert "REFUSED confined" in out and "seccomp filters are not available" in out, out


def test_the_seccomp_tables_match_libseccomp():
    """Syscall numbers of both architectures, checked against libseccomp's own tables."""
    seccomp = pytest.importorskip("pyseccomp")
    for arch, table in (("x86_64", seccomp.Arch.X86_64), ("aarch64", seccomp.Arch.AARCH64)):
        for name, number in confine.SYSCALLS[arch].items():
            assert seccomp.resolve_syscall(table, name) == number, (arch, name)
        assert set(confine.DENIED) | {"clone", "clone3"} == set(confine.SYSCALLS[arch])


def test_the_filter_checks_the_architecture_first_and_every_jump_lands():
    for arch in ("x86_64", "aarch64"):
        prog = confine.seccomp_program(arch)
        assert prog[:3] == [(confine.LD_W_ABS, 0, 0, 4), (confine.JEQ_K, 1, 0, confine.AUDIT_ARCH[arch]),
                            (confine.RET_K, 0, 0, confine.RET_KILL_PROCESS)]
        for i, (code, jt, jf, _) in enumerate(prog):
            if code in (confine.JEQ_K, confine.JGE_K, confine.JSET_K):
                assert i + 1 + max(jt, jf) < len(prog)
        assert (confine.JGE_K in [c for c, *_ in prog]) == (arch == "x86_64")  # the x32 ABI is refused


def test_a_python_under_a_private_folder_gets_a_readable_view():
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(dir=confine.shared_tmp()))  # pytest's own tmp folders are private (0700)
    tmp.chmod(0o755)
    try:
        _view_of_a_private_python(tmp)
    finally:
        shutil.rmtree(tmp)


def _view_of_a_private_python(tmp_path: Path) -> None:
    private = tmp_path / "root-only"
    (private / "lib" / "test").mkdir(parents=True)
    (private / "lib" / "mod.py").write_text("X = 1\n")
    (private / "lib" / "test" / "big.py").write_text("")
    private.chmod(0o700)
    view = confine.python_view([str(private / "lib")], str(tmp_path / "view"))
    copy = view[str(private / "lib")]
    assert confine.readable_by_others(copy) and (Path(copy) / "mod.py").read_text() == "X = 1\n"
    assert not (Path(copy) / "test").exists()
    assert confine.map_path(view, str(private / "lib" / "sub")) == copy + "/sub"


# ---------------------------------------------------------------------------------------------
# the verdict: split tests, values judged here, one result line with the nonce
# ---------------------------------------------------------------------------------------------

def _problem(pid: str):
    return load_problems("humaneval", ids=[pid])[0]


def test_humaneval_asserts_split_into_values_and_loops_need_proof():
    t0 = verdict.trial_for(_problem("HumanEval/0"), "def has_close_elements(n, t):\n    return True")
    assert t0.decided == "values" and t0.payload["tests"] == "" and len(t0.expect) == 7
    assert t0.payload["probes"][0] == "has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3)"
    assert [e.expected for e in t0.expect] == [True, False, True, False, True, True, False]
    assert "True" not in " ".join(t0.payload["probes"])  # the expected values stay here
    t32 = verdict.trial_for(_problem("HumanEval/32"), "def find_zero(xs):\n    return 0.0")
    assert t32.decided == "proof" and "check(find_zero)" in t32.payload["tests"] and t32.expect == ()


def test_mbpp_lines_split_and_setup_stays_trusted():
    mini = Path(__file__).resolve().parent / "fixtures" / "evals" / "mbpp_mini.jsonl"
    for problem in load_problems("mbpp", str(mini)):
        trial = verdict.trial_for(problem, fenced(problem.solution))
        assert trial.decided in ("values", "inside") and trial.payload["namespace"] == "shared"
        assert trial.payload["trusted"].strip() == problem.setup.replace("\r\n", "\n").strip()
    line = verdict._split_mbpp("assert set(f((3, 4), (5, 4))) == set((4,))\nassert not g(1)\nassert h(2) is None")
    probes, expect, _ = line
    assert probes == ["set(f((3, 4), (5, 4)))", "g(1)", "h(2)"]
    assert [(e.op, e.expected) for e in expect] == [("eq", {4}), ("falsy", None), ("is", None)]
    assert verdict._split_mbpp("x = 1\nassert f(x) == 2") is None  # a statement that is not an assert: proof


def test_literals_are_evaluated_here_but_never_names_or_calls_of_the_answer():
    import ast

    assert verdict.literal(ast.parse("(3 + 5 + 7, 3 * 5 * 7, -1.5, float('inf'))", mode="eval").body)[:3] == \
        (15, 105, -1.5)
    for text in ("f(1)", "x", "math.pi", "'a' * 10**9", "2 ** 10**6", "__import__('os')"):
        with pytest.raises(ValueError):
            verdict.literal(ast.parse(text, mode="eval").body)


def test_values_come_back_with_their_exact_type():
    values = [None, True, 0, -7, 10 ** 5000, 0.1, float("inf"), 1 + 2j, "é", b"\x00", [1, (2, 3)],
              {1: {"a": frozenset({1})}}, {1, 2}]
    for value in values:
        back = verdict.decode(json.loads(json.dumps(harness.encode(value))))
        assert back == value and type(back) is type(value)
    nan = verdict.decode(harness.encode(float("nan")))
    assert nan != nan
    opaque = verdict.decode(harness.encode(object()))
    assert not verdict.holds(verdict.Expectation("eq", opaque), opaque)
    assert not verdict.holds(verdict.Expectation("ne", 1), [opaque])
    assert not verdict.holds(verdict.Expectation("truthy"), opaque)


def test_the_wrapped_function_returns_only_plain_values():
    guard = harness._Guard()

    class Anything(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    wrapped = guard.wrap(lambda: [Anything(0), {"k": Anything(1)}])
    assert wrapped() == [0, {"k": 1}] and type(wrapped()[0]) is int
    with pytest.raises(TypeError, match="plain values"):
        guard.wrap(lambda: object())()
    assert list(guard.wrap(lambda: (Anything(i) for i in range(3)))()) == [0, 1, 2]


def test_only_one_line_with_this_runs_nonce_passes():
    trial = verdict.trial_for(_problem("HumanEval/0"), "def has_close_elements(n, t):\n    return True")
    nonce = verdict.new_nonce()
    values = [harness.encode(e.expected) for e in trial.expect]
    good = nonce + " " + json.dumps({"probes": values, "tests": None, "error": None}) + "\n"
    assert verdict.judge_channel(trial, nonce, 0, good).passed
    forged = {
        "no line": "", "another nonce": verdict.new_nonce() + good[len(nonce):], "twice": good + good,
        "something after it": good + "x", "no newline": good[:-1], "not json": nonce + " {\n",
        "fewer values": nonce + " " + json.dumps({"probes": values[:3], "tests": None, "error": None}) + "\n",
        "a line that raised": nonce + " " + json.dumps({"probes": [{"raised": "SystemExit"}], "tests": None,
                                                        "error": None}) + "\n",
        "a wrong value": nonce + " " + json.dumps({"probes": [["b", False]] * 7, "tests": None, "error": None}) + "\n",
        "a malformed value": nonce + " " + json.dumps({"probes": [["i", 5]] * 7, "tests": None, "error": None}) + "\n",
    }
    for name, channel in forged.items():
        assert not verdict.judge_channel(trial, nonce, 0, channel).passed, name
    assert not verdict.judge_channel(trial, nonce, 1, good).passed  # exit status 0 is needed too


def test_the_standalone_harness_puts_the_result_line_last(tmp_path):
    """docker mode runs harness.py as `python -c` with the payload on stdin: the verdict reads stdout's last line."""
    problem = _problem("HumanEval/0")
    source = (Path(harness.__file__)).read_text()
    for answer, expected in (("def has_close_elements(n, t):\n    print('x', end='')\n"
                              "    return any(abs(a - b) < t for i, a in enumerate(n) for b in n[i + 1:])", True),
                             ("import os\nprint('passed')\nos._exit(0)", False),
                             ("def has_close_elements(n, t):\n    raise SystemExit(0)", False)):
        trial, nonce = verdict.trial_for(problem, fenced(answer)), verdict.new_nonce()
        out = subprocess.run([sys.executable, "-c", source], input=json.dumps({**trial.payload, "nonce": nonce}),
                             capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert verdict.judge_stdout(trial, nonce, out.returncode, out.stdout).passed is expected, out


def test_the_preflight_reports_what_the_machine_offers(capsys):
    from mcp_server.evals.kit.probe import sandbox_facts, sandbox_line
    from mcp_server.pipeline.preflight_job import sandbox_report
    from mcp_server.resources import embedded_source

    report = sandbox_report("auto")
    line = capsys.readouterr().out
    assert report["landlock_abi"] >= 1 and report["seccomp"] and report["uses"] in ("namespaces", "confined")
    assert f"eval.sandbox auto: {report['uses']} starts here" in line and "landlock abi" in line
    embedded: dict = {}  # the training script's --check-only (the preflight's remote check) carries the probe
    exec(compile(embedded_source("evals/kit/probe.py"), "<embedded>", "exec"), embedded)
    assert embedded["sandbox_line"](embedded["sandbox_facts"]()) == sandbox_line(sandbox_facts())
