"""Child programs the crash tests kill or starve, and the helpers to kill them at random moments.

Run as ``python crash_support.py <program> ARGS``:
- ``zygote pitfalls SKILL``: forks children that append pitfalls to SKILL (TUNEPACK_SKILLS_DIR) forever, printing
  each id once written (see ``Zygote``);
- ``zygote registry ROOT ADAPTER NAME``: forks children that push ADAPTER to the registry at ROOT forever, printing
  each version once made;
- ``zygote sweep FOLDER``: forks sweep controllers of the sweep in FOLDER;
- ``diskfull WORKDIR MODE``: fills the disk under WORKDIR (MODE tmpfs: a tiny tmpfs is mounted there; MODE rlimit:
  RLIMIT_FSIZE makes every write fail instead), tries a write of each store and prints a JSON report.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = next(p for p in HERE.parents if (p / "pyproject.toml").is_file())


class Zygote:
    """A helper process that imports once and forks a writer child on demand, so each of many kills costs no
    interpreter start-up: ``cycle`` forks a child, kills it -9 after a random delay and returns what it acknowledged
    (the lines it printed: work it reported done)."""

    def __init__(self, *program: str, env: dict | None = None):
        self.proc = subprocess.Popen([sys.executable, str(HERE / "crash_support.py"), "zygote", *program], cwd=REPO,
                                     text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env or os.environ.copy(), bufsize=1)
        assert self._line() == "ready", self.proc.stderr.read()

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the zygote died: {self.proc.stderr.read()[-3000:]}")
        return line.strip()

    def _say(self, word: str) -> None:
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()

    def cycle(self, rng: random.Random, low: float, high: float) -> list[str]:
        self._say("go")
        acks = []
        while not (line := self._line()).startswith("pid "):  # on a busy machine the child may write first
            assert line.startswith("ack "), line
            acks.append(line[4:])
        pid = self.last_pid = int(line.split()[1])
        time.sleep(rng.uniform(low, high))
        os.kill(pid, signal.SIGKILL)
        self._say("reap")
        while (line := self._line()) != f"reaped {pid}":
            assert line.startswith("ack "), line
            acks.append(line[4:])
        return acks

    def close(self) -> str:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()


def zygote(program: str, *args: str) -> None:
    """Serve ``Zygote``: 'go' forks a child running PROGRAM ARGS; 'reap' waits for that (killed) child."""
    writer = {"pitfalls": write_pitfalls, "registry": push_forever, "sweep": run_controller}[program]
    writer(*args, ready_only=True)  # import what the writer needs before any fork
    print("ready", flush=True)
    child = None
    for line in sys.stdin:
        if line.strip() == "go":
            child = os.fork()
            if child == 0:
                try:
                    writer(*args)
                finally:
                    os._exit(1)
            print(f"pid {child}", flush=True)
        elif line.strip() == "reap" and child:
            os.waitpid(child, 0)
            print(f"reaped {child}", flush=True)


# --- the children ---------------------------------------------------------------------------------

def write_pitfalls(skill: str, ready_only: bool = False) -> None:
    from mcp_server.skills.pitfalls import add_pitfall

    while not ready_only:
        w = [secrets.token_hex(4) for _ in range(6)]
        done = add_pitfall(skill, symptom=f"writer {w[0]} saw {w[1]} fail {w[2]}",
                           cause=f"because {w[3]} met {w[4]} and {w[5]}", fix="do the other thing instead",
                           evidence="job local-crash: killed at random", source="crash-test")
        print(f"ack {done.id}", flush=True)


def push_forever(root: str, adapter: str, name: str, ready_only: bool = False) -> None:
    from mcp_server.registry.local import LocalRegistry

    registry = LocalRegistry(root)
    while not ready_only:
        entry = registry.push(adapter, name, card=lambda v: f"# {name} v{v}\n", base_model="tiny")
        print(f"ack {entry.version}", flush=True)


def run_controller(folder: str, ready_only: bool = False) -> None:
    """A sweep controller polling every 50 ms; its own output goes nowhere (acknowledgements only on stdout)."""
    import matplotlib.pyplot  # noqa: F401 — the report's import, done once before the forks
    from huggingface_hub import hf_api  # noqa: F401 — imported lazily by the Jobs backend

    from mcp_server.pipeline import remote, start_pipeline  # noqa: F401 — the controller's lazy imports
    from mcp_server.sweeps import report  # noqa: F401
    from mcp_server.sweeps.controller import Controller

    if not ready_only:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        Controller(folder, poll_s=0.05).run()


def fake_adapter(folder: Path, weights_mb: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "tiny", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(os.urandom(int(weights_mb * 2**20)))
    (folder / "tunepack_manifest.json").write_text(json.dumps({"config": {"model": {"name": "tiny"}}}))
    (folder / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {str(i): i for i in range(500)}}}))
    return folder


def _outcome(fn) -> dict:
    from mcp_server.errors import TunepackError

    try:
        fn()
    except TunepackError as exc:
        return {"raised": type(exc).__name__, "tunepack": True, "problem": exc.problem, "fix": exc.fix}
    except BaseException as exc:  # noqa: BLE001 — the report says what escaped
        return {"raised": type(exc).__name__, "tunepack": False, "problem": str(exc)[:300], "fix": ""}
    return {"raised": None}


def _fill(folder: Path) -> Path:
    """Write until the disk refuses; returns the filler file."""
    filler = folder / "filler.bin"
    with open(filler, "wb", buffering=0) as fh:
        for size in (2**16, 2**12, 2**9, 1):
            try:
                while True:
                    fh.write(b"\0" * size)
            except OSError:
                continue
    return filler


def _starve(work: Path, mode: str):
    """Fill the disk (tmpfs) or forbid any file growth (rlimit); returns the undo."""
    if mode == "tmpfs":
        filler = _fill(work)
        return lambda: filler.unlink()
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))  # Python ignores SIGXFSZ: writes fail with EFBIG
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def _stores(work: Path) -> dict:
    from mcp_server.jobs.store import JobStore
    from mcp_server.ledger import Ledger
    from mcp_server.registry.local import LocalRegistry
    from mcp_server.skills.validate import check_skill

    home = work / "home"
    return {"jobs": len(JobStore(home / "jobs" / "jobs.db").all()), "ledger": len(Ledger("full").list()),
            "skill": check_skill(work / "skills" / "tunepack-trackio"),
            "registry": [v.version for v in LocalRegistry().list("full")],
            "job_dirs": sorted(p.name for p in (home / "jobs").iterdir() if p.is_dir()),
            "staging": sorted(p.name for p in (home / "registry" / "full").glob(".staging-*"))}


def disk_full(work: str, mode: str, outside: str) -> None:
    from mcp_server.jobs import JobSpec
    from mcp_server.jobs.local import LocalBackend
    from mcp_server.jobs.store import JobStore
    from mcp_server.ledger import Ledger
    from mcp_server.registry.local import LocalRegistry
    from mcp_server.skills.pitfalls import add_pitfall

    root, out = Path(work), Path(outside)
    shutil.copytree(REPO / "skills" / "tunepack-trackio", root / "skills" / "tunepack-trackio")
    store = JobStore(root / "home" / "jobs" / "jobs.db")
    store.insert(id="local-before", name="before", stage="COMPLETED", labels={}, command=["true"], env={},
                 timeout_s=None, flavor="local", created_at=time.time(), workdir=str(root), log_path="/dev/null",
                 spec={})
    Ledger("full").propose("a baseline recorded before the disk filled up", "training.learning_rate", 0.001)
    LocalRegistry().push(fake_adapter(out / "small", 0.01), "full", card="# small\n")
    before = _stores(root)
    script = out / "job.py"
    script.write_text("print('hello')\n")
    big = fake_adapter(out / "big", 4)
    undo = _starve(root, mode)
    tries = {
        "job_store": lambda: LocalBackend().submit(JobSpec(script=str(script), name="starved")),
        "ledger": lambda: Ledger("full").propose("a change tried while the disk is full", "lora.r", 4),
        "pitfall": lambda: add_pitfall("tunepack-trackio", symptom="a pitfall written onto a full disk",
                                       cause="the disk holding the skills is full", fix="free space first"),
        "registry": lambda: LocalRegistry().push(big, "full", card="# big\n"),
    }
    outcomes = {name: _outcome(fn) for name, fn in tries.items()}
    while_full = _stores(root)
    undo()
    after_free = {"ledger": _outcome(lambda: Ledger("full").propose("once there is room again", "lora.alpha", 8)),
                  "registry": _outcome(lambda: LocalRegistry().push(big, "full", card="# big\n"))}
    print(json.dumps({"before": before, "outcomes": outcomes, "while_full": while_full, "after_free": after_free,
                      "stores_after": _stores(root)}), flush=True)


if __name__ == "__main__":
    program, args = sys.argv[1], sys.argv[2:]
    {"zygote": zygote, "diskfull": disk_full}[program](*args)
