"""Every MCP tool, fuzzed through the real client over stdio with arguments drawn from its own input schema
(from ``tools/list``) mixed with hostile values: wrong types, missing and extra keys, 1 MB strings, NUL bytes and
odd unicode, negative / huge numbers, path traversal, absolute paths, symlinks out of the workspace, injection
strings for the Viewer's where/orderby/search, ids that do not exist.

Each call must end in a result — an error whose text says what to do (``Fix:``), or a valid answer — within its
budget, with no Python traceback in the result or on the server's stderr, no HF token and no file from outside the
workspace behind an id argument in it; the server must still answer afterwards; nothing may be written outside the
tunepack home, TRACKIO_DIR, the HF cache, the skills folder and the paths the call named (the sandbox is
snapshotted around every call; new files in the repository are looked for around every tool); and the spending
tools (harness/catalog.py SPENDING) must never start a job or publish: the client cannot elicit and holds no
approval token (free local jobs and private uploads need no yes by design, so their calls are kept on the paid and
public side). One server process serves the whole module; a restart is itself a failure.

``TUNEPACK_FUZZ_EXAMPLES`` sets the examples per tool (default 10 for CI, derandomized);
``TUNEPACK_FUZZ_REPORT=path.json`` also writes the per-tool counts and failures there. The long run::

    TUNEPACK_FUZZ_EXAMPLES=1000 TUNEPACK_FUZZ_REPORT=fuzz.json python -m pytest tests/reliability/test_fuzz_tools.py -q
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from support.common import REPO, short_conversation, write_jsonl

from mcp_server.harness.catalog import READ_ONLY, SPENDING

EXAMPLES = int(os.environ.get("TUNEPACK_FUZZ_EXAMPLES", "10"))
REPORT = os.environ.get("TUNEPACK_FUZZ_REPORT")
CALL_BUDGET_S = 25.0  # every tool promises an answer within 20 s
WAIT_BUDGET_S = 65.0  # jobs_wait waits for a real job only, and the fuzzed ids name none
CANARY = "CANARY-outside-workspace-4f1c9e"
MB = "x" * (1 << 20)
MAX_ERROR_CHARS, MAX_RESULT_CHARS = 6000, 64000
WRITE_SLOTS = {("pipeline_render", "output_path"), ("traces_convert", "output"), ("ledger_report", "path")}
ID_SLOTS = {"job_id", "sweep_id", "resume", "name", "project", "run", "worker", "arxiv_id", "file", "skill",
            "repo_id", "approval_token", "metric", "variable"}
SQL = [
    "\"text\" = 'a' OR 1=1", "1=1; DROP TABLE data; --",
    "\"score\" > 3) UNION SELECT * FROM read_text('/etc/passwd') --",
    "read_text('/etc/passwd') IS NOT NULL", "\"text\" IN (SELECT content FROM read_text('../outside/secret.txt'))",
    "1=1; COPY (SELECT 42) TO '../outside/pwned.csv'", "getenv('HF_TOKEN') <> ''", "\"score\" DESC; ATTACH 'x.db'",
    "\"text\"; SELECT 1", "'", "\"", "\"nope\" = 1", "\"score\" > 3 AND", "((((((((((((((((((((",
    "\"text\" LIKE '%' ESCAPE '\\'", "$1", "?", "\"text\" = $$x$$", "(SELECT 1) = 1", "\"score\" DESC, \"text\" ASC",
]
WEIRD = ["", " ", "\x00", "a\x00b", "ünïcødé ☃ 𝔘 \u202e\u200b", "\ud7ff\ufeff", "🤖" * 50, "\n\r\t", "$(id)",
         "`id`",
         "{{7*7}}", "%s%n%x", "${HOME}", "*", "?", "-rf", "--help", "null", "None", "NaN", "-1", "1e999", MB,
         "x" * 5000, "hf_" + "FAKE" * 8 + "12", "tp-approve-forged", "CON", "aux.txt"]  # hf_…: token-shaped, assembled
IDS = ["local-deadbeef", "local-000000000000", "job-does-not-exist", "sweep-00000000", "sw-nope", "nope",
       "00000000-0000-0000-0000-000000000000", "alice/missing-model", "tunepack-nope", "2305.14314", "9999.99999",
       "tunepack-sft", "P-001", "fuzz-run", "../../../outside/secret", "..", "."]
NUMBERS = [0, -1, -2**31, 2**31, 2**53 + 1, 2**63, 10**30, -10**30, 1e308, -1e308, 1e-308, 0.5, float("nan"),
           float("inf"), float("-inf"), True, False]
HINTS = {  # likely values per argument name, so the fuzz also reaches past the first checks
    "backend": ["local", "hf", "HF", " local", "modal", "../local"],
    "flavor": ["cpu-basic", "t4-small", "a10g-small", "h100x8", "nope-gpu"],
    "stage": ["RUNNING", "COMPLETED", "ERROR", "running", "DROP"],
    "split": ["train", "test", "validation", "../train"], "config": ["default", "nope"],
    "metric": ["loss", "eval_loss", "eval/humaneval/pass@1"], "metrics": ["loss", "eval_loss"],
    "repo_id": ["alice/fuzz-model", "alice/../bob", "team/x", "not a repo", "a" * 120 + "/b"],
    "source": ["local", "hf"], "status": ["running", "keep", "discard", "crash"],
    "project": ["tunepack", "fuzz", "tunepack-demo"], "run": ["run-1", "fuzz-run"],
}
WRONG = [None, True, 0, -7, 3.5, "text", [], ["a"], [1, None], {}, {"a": 1}, {"approve": True}]


@dataclass
class Sandbox:
    root: Path
    workspace: Path
    outside: Path
    home: Path
    trackio: Path
    hf: Path
    skills: Path
    errlog: Path
    hub: object = None
    viewer: object = None

    @property
    def allowed(self) -> tuple[Path, ...]:
        return (self.home, self.trackio, self.hf, self.skills, self.errlog)

    def env(self) -> dict[str, str]:
        env = os.environ.copy()
        env.update(TUNEPACK_HOME=str(self.home), TRACKIO_DIR=str(self.trackio), HF_HOME=str(self.hf),
                   HOME=str(self.root / "user-home"), TMPDIR=str(self.root / "tmp"),
                   TUNEPACK_SKILLS_DIR=str(self.skills), TUNEPACK_TOOLSETS="all",
                   HF_ENDPOINT=self.hub.endpoint, HF_TOKEN=self.hub.state.token, TUNEPACK_VIEWER_URL=self.viewer.url,
                   HF_HUB_DISABLE_TELEMETRY="1", PYTHONUNBUFFERED="1")
        return env


def _workspace(root: Path) -> Sandbox:
    box = Sandbox(root=root, workspace=root / "workspace", outside=root / "outside", home=root / "home",
                  trackio=root / "trackio", hf=root / "hf", skills=root / "skills", errlog=root / "server-stderr.log")
    for folder in (box.workspace, box.outside, box.home, box.trackio, box.hf, root / "user-home", root / "tmp"):
        folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "skills", box.skills)
    ws = box.workspace
    write_jsonl(ws / "data.jsonl", [{"messages": short_conversation(i)} for i in range(6)])
    write_jsonl(ws / "sessions" / "chat.jsonl", [{"messages": short_conversation(i)} for i in range(2)])
    write_jsonl(box.outside / "data.jsonl", [{"messages": short_conversation(i)} for i in range(3)])
    (box.outside / "secret.txt").write_text(CANARY + "\n")
    # A config that validates but only runs on paid hardware, so every spending path meets the gate.
    (ws / "config.yaml").write_text(json.dumps({
        "model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"hub_id": "alice/missing-data"},
        "training": {"max_length": 128, "max_steps": 5}, "output": {"name": "fuzz-run"},
        "job": {"backend": "hf", "flavor": "a10g-small", "timeout_s": 3600}}))
    (ws / "sweep.yaml").write_text(json.dumps({
        "name": "fuzz-sweep", "base": "config.yaml", "grid": {"training.learning_rate": [0.001, 0.002]},
        "max_concurrent": 1, "metric": {"name": "loss", "direction": "min"}, "budget_usd": 5}))
    (ws / "loop-train.yaml").write_text(json.dumps({  # a loop reading its sessions from the Hub: it can be quoted
        "model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": "data.jsonl"}, "output": {"name": "fuzz-loop"}}))
    (ws / "loop.yaml").write_text(json.dumps({
        "name": "fuzz-loop", "config": "loop-train.yaml", "sources": ["hf://datasets/alice/fuzz-sessions"],
        "max_cycles": 2, "retention": {"path": "data.jsonl"}}))
    _adapter(box, ws / "adapter")
    (ws / "script.py").write_text("print('hello from a fuzzed job')\n")
    (ws / "notes.txt").write_text("not a dataset\n")
    (ws / "bad.yaml").write_text("model: [unclosed\n")
    (ws / "link-out").symlink_to(box.outside)
    (ws / "link-etc").symlink_to("/etc")
    (ws / "link-secret.jsonl").symlink_to(box.outside / "secret.txt")
    (ws / "loop").symlink_to(ws / "loop")
    return box


def _adapter(box: Sandbox, folder: Path) -> None:
    """A registered adapter line 'fuzz-run' (made-up weights), so eval and publish calls reach the approval gate."""
    from mcp_server.registry import LocalRegistry

    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen3-0.6B", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"\0" * 64)
    (folder / "tunepack_manifest.json").write_text(json.dumps({"config": {"model": {"name": "Qwen/Qwen3-0.6B"}}}))
    LocalRegistry(box.home / "registry").push(folder, "fuzz-run")


def _pools(box: Sandbox) -> tuple[list[str], list[str]]:
    """Path values for reading (anything) and for writing (never outside the sandbox, never a system file)."""
    inside = ["data.jsonl", "./data.jsonl", "sessions", "sessions/chat.jsonl", "adapter", "config.yaml", "sweep.yaml",
              "script.py", "notes.txt", "bad.yaml", "missing.yaml", "missing/", ".", "..", "loop", "link-out",
              "link-out/data.jsonl", "link-secret.jsonl",
              "../outside/secret.txt", "../outside", str(box.outside / "secret.txt"), str(box.workspace / "data.jsonl"),
              str(box.home), str(box.home / "jobs"), "hf://datasets/nobody/nothing", "hf://datasets/../../x",
              "hf://datasets/alice/missing-data@nope", "tunepack/viewer-fixture", "tunepack/private-fixture",
              "file:///etc/passwd", "http://127.0.0.1:9/x", "out/new.jsonl", "link-out/pwned.jsonl",
              str(box.outside / "pwned.parquet"), "deep/er/path.jsonl", "out.txt"]
    system = ["/etc/passwd", "/etc", "/", "/proc/self/environ", "/proc/self/fd/0", "/dev/zero", "/dev/urandom",
              "/root/.ssh/id_rsa", "~/.ssh/id_rsa", "~", "link-etc/passwd", "link-etc", "../" * 12 + "etc/passwd",
              "C:\\Windows\\win.ini", "\\\\server\\share"]
    return inside + system, inside


def _text_values(box: Sandbox, tool: str, prop: str) -> st.SearchStrategy:
    read, write = _pools(box)
    pools = [st.text(max_size=30), st.sampled_from(WEIRD)]
    if (tool, prop) in WRITE_SLOTS:
        return st.one_of(*pools, st.sampled_from(write), st.sampled_from(write))
    pools.append(st.sampled_from(read if tool in READ_ONLY else write))
    if prop in HINTS:
        pools += [st.sampled_from(HINTS[prop])] * 2
    if prop in ("where", "orderby", "query"):
        pools += [st.sampled_from(SQL), st.sampled_from(SQL)]
    if prop in ID_SLOTS or prop.endswith("_id"):
        pools.append(st.sampled_from(IDS))
    return st.one_of(*pools)


def _numbers(schema: dict) -> st.SearchStrategy:
    low, high = schema.get("minimum"), schema.get("maximum")
    if schema.get("type") == "integer":
        valid = st.integers(min_value=low, max_value=high)
    else:
        valid = st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False)
    return st.one_of(valid, st.sampled_from(NUMBERS))


class Schemas:
    """Hypothesis strategies from a tool's JSON schema, each slot sometimes replaced by a wrong type."""

    def __init__(self, box: Sandbox, tool: str, schema: dict):
        self.box, self.tool, self.defs = box, tool, schema.get("$defs", {})

    def slot(self, schema: dict, prop: str, depth: int = 0) -> st.SearchStrategy:
        return st.one_of(self.valid(schema, prop, depth), self.valid(schema, prop, depth), st.sampled_from(WRONG))

    def valid(self, schema: dict, prop: str, depth: int) -> st.SearchStrategy:  # noqa: C901 - one case per schema kind
        if "$ref" in schema:
            return self.valid(self.defs[schema["$ref"].split("/")[-1]], prop, depth)
        if "anyOf" in schema:
            return st.one_of(*(self.valid(s, prop, depth) for s in schema["anyOf"]))
        if "enum" in schema:
            return st.one_of(st.sampled_from(schema["enum"]), st.sampled_from(schema["enum"]), st.sampled_from(WEIRD))
        kind = schema.get("type")
        if kind == "string":
            return _text_values(self.box, self.tool, prop)
        if kind in ("integer", "number"):
            return _numbers(schema)
        if kind == "boolean":
            return st.booleans()
        if kind == "null":
            return st.none()
        if kind == "array":
            items = self.slot(schema.get("items", {}), prop, depth + 1) if depth < 3 else st.none()
            return st.lists(items, min_size=schema.get("minItems", 0), max_size=4)
        if kind == "object" or "properties" in schema:
            return self.obj(schema, depth)
        return st.sampled_from(WRONG)  # no type: anything

    def obj(self, schema: dict, depth: int = 0) -> st.SearchStrategy:
        props, required = schema.get("properties", {}), set(schema.get("required", []))
        extra = schema.get("additionalProperties")
        keys = st.one_of(st.text(max_size=12), st.sampled_from(["approval", "ctx", "__proto__", "approve", "base",
                                                                  "output", "backend", "job", "data", "path"]))
        if depth >= 3:
            return st.just({})
        if extra and not props:
            values = self.slot(extra, "value", depth + 1) if isinstance(extra, dict) else st.sampled_from(WRONG + WEIRD)
            return st.dictionaries(keys, values, max_size=4)
        parts = {name: self.slot(sub, name, depth + 1) for name, sub in props.items()}
        present = st.fixed_dictionaries({}, optional=parts) if parts else st.just({})
        must = st.fixed_dictionaries({n: parts[n] for n in required if n in parts})
        return st.builds(lambda a, b: {**a, **b}, present, must)

    def arguments(self, schema: dict) -> st.SearchStrategy:
        """Mostly schema-shaped arguments; sometimes with a required key dropped or unknown keys added."""
        base = self.obj(schema)
        extra_keys = st.dictionaries(st.sampled_from(["approval", "ctx", "zzz", "approve", "Config_Path", ""]),
                                     st.sampled_from(WRONG + WEIRD[:6]), min_size=1, max_size=2)
        dropped = base.flatmap(lambda args: st.sampled_from(sorted(args)).map(
            lambda gone: {k: v for k, v in args.items() if k != gone}) if args else st.just(args))
        added = st.builds(lambda a, b: {**a, **b}, base, extra_keys)
        return st.one_of(base, base, base, dropped, added, st.just({}))


# ------------------------------------------------------------------------------------------------------------------
# the one server of the module, driven from synchronous hypothesis tests through a blocking portal


class Server:
    def __init__(self, box: Sandbox):
        self.box = box
        self.restarts = 0
        self._seen = 0
        self._start()

    def _start(self) -> None:
        command = f'exec "{sys.executable}" -m mcp_server.cli serve 2>>"{self.box.errlog}"'
        params = StdioServerParameters(command="/bin/sh", args=["-c", command], env=self.box.env(),
                                       cwd=str(self.box.workspace))
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._client_cm = self.portal.wrap_async_context_manager(Client(params, mode="legacy"))
        self.client = self._client_cm.__enter__()

    def stop(self) -> None:
        for cm in (self._client_cm, self._portal_cm):
            try:
                cm.__exit__(None, None, None)
            except Exception:  # a dead server's streams may fail to close; nothing to keep
                pass

    def restart(self) -> None:
        self.restarts += 1
        self.stop()
        self._start()

    def call(self, name: str, args: dict, budget: float):
        """(result or None, exception text or None, seconds); None result with no exception = past the budget."""
        async def go():
            with anyio.move_on_after(budget):
                return await self.client.call_tool(name, args)
            return None

        start = time.monotonic()
        try:
            return self.portal.call(go), None, time.monotonic() - start
        except Exception as exc:  # a protocol-level error instead of a tool result
            return None, f"{type(exc).__name__}: {exc}", time.monotonic() - start

    def alive(self) -> bool:
        async def ping():
            with anyio.move_on_after(15):
                return (await self.client.list_tools()).tools
            return None

        try:
            return bool(self.portal.call(ping))
        except Exception:
            return False

    def tools(self) -> dict[str, dict]:
        async def listing():
            return (await self.client.list_tools()).tools

        return {t.name: t.input_schema for t in self.portal.call(listing)}

    def new_stderr(self) -> str:
        data = self.box.errlog.read_bytes() if self.box.errlog.exists() else b""
        chunk, self._seen = data[self._seen:], len(data)
        return chunk.decode("utf-8", "replace")


# ------------------------------------------------------------------------------------------------------------------
# what a call may change


def _files(top: Path, skip: tuple[Path, ...]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for folder, dirs, names in os.walk(top):  # symlinks are not followed
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d not in skip]
        for name in names + [d for d in dirs]:
            path = here / name
            if path in skip:
                continue
            try:
                info = path.lstat()
            except OSError:
                continue
            out[str(path)] = (info.st_mtime_ns, info.st_size) if not path.is_dir() or path.is_symlink() else (0, 0)
    return out


def _changed(before: dict, after: dict) -> list[str]:
    return sorted(p for p, v in after.items() if before.get(p) != v)


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _named(box: Sandbox, args: dict, schema: dict) -> list[Path]:
    """Paths a call names, as given and resolved (relative to the server's folder), plus the write defaults."""
    values = _strings(args) + [str(p.get("default")) for p in schema.get("properties", {}).values()
                               if isinstance(p.get("default"), str)]
    out = []
    for value in values:
        if not value or "\x00" in value or len(value) > 4096:
            continue
        path = Path(os.path.expanduser(value))
        path = path if path.is_absolute() else box.workspace / path
        out.append(Path(os.path.abspath(path)))
        try:
            out.append(path.resolve())
        except (OSError, RuntimeError):
            pass
    return out


def _allowed_write(changed: str, named: list[Path]) -> bool:
    """A named path, what lies under it, or a file beside it named after it (out.jsonl → out.stats.json)."""
    path = Path(changed)
    return any(path == n or n in path.parents or (path.parent == n.parent and path.name.startswith(f"{n.stem}."))
               for n in named)


def _repo_state() -> dict[str, tuple[int, int]]:
    top = tuple(p for p in REPO.iterdir() if p.name.startswith(".") or p.name in ("node_modules", "build")
                or p.name.endswith(".egg-info"))  # git, the venv, tool caches (ruff, mypy, hypothesis)
    return {p: v for p, v in _files(REPO, top).items() if "__pycache__" not in p}


def _repo_changes(before: dict, after: dict) -> list[str]:
    """New files in the repository, outside the source trees: other engineers edit this tree while the suite runs, so
    their changes cannot be told from a tool's (the fuzz names no repository path, and skills go to a copy)."""
    def ours(path: str) -> bool:
        return not os.path.relpath(path, REPO).startswith(("tests/", "mcp_server/", "bench/", "skills/"))
    return [p for p in after if p not in before and ours(p)]


def _jobs(box: Sandbox) -> int:
    db = box.home / "jobs" / "jobs.db"
    if not db.exists():
        return 0
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute("SELECT count(*) FROM jobs").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        con.close()


def _open_jobs(box: Sandbox) -> list[str]:
    db = box.home / "jobs" / "jobs.db"
    if not db.exists():
        return []
    con = sqlite3.connect(db, timeout=30)
    try:
        return [r[0] for r in con.execute("SELECT id FROM jobs WHERE stage IN ('SCHEDULING', 'RUNNING')")]
    finally:
        con.close()


def _spent(box: Sandbox) -> int:
    """Jobs (local or HF), Hub repos and commits so far."""
    hub = box.hub
    return (len(hub.requests("POST", r"/api/jobs/.*")) + len(hub.requests("POST", r"/api/repos/create"))
            + len(hub.requests("POST", r"/api/.*/commit/.*")) + _jobs(box))


def _needing_approval(args: dict, schema: dict) -> dict:
    """A spending tool's arguments kept on the side that needs a human yes: free local jobs and private uploads pass
    without one by design."""
    props = schema.get("properties", {})
    if "backend" in props and args.get("backend") in (None, "", "local"):
        args = {**args, "backend": "hf"}
    if "public" in props:
        args = {**args, "public": True}
    if "private" in props:
        args = {**args, "private": False}
    return args


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in (result.content or []))


def _shape(value, limit: int = 160) -> str:
    text = json.dumps(value, default=str, ensure_ascii=True)
    return text if len(text) <= limit else text[:limit] + f"…({len(text)} chars)"


@dataclass
class Tally:
    calls: int = 0
    errors: int = 0
    failures: list = field(default_factory=list)
    slowest_s: float = 0.0


TALLY: dict[str, Tally] = {}


def _result_problems(tool: str, args: dict, result, tally: Tally, token: str) -> list[str]:
    """What is wrong with a tool result: an error without a fix, a crash, an oversized answer, a leak, a spend."""
    problems = []
    text = _text(result)
    if result.is_error:
        tally.errors += 1
        if "Fix:" not in text:
            problems.append(f"error without a fix: {text[:300]}")
        if len(text) > MAX_ERROR_CHARS:
            problems.append(f"an error of {len(text)} characters (the agent reads all of it)")
    elif len(text) > MAX_RESULT_CHARS:
        problems.append(f"a result of {len(text)} characters")
    if "Traceback" in text or "Internal error in" in text:
        problems.append(f"crash in the result: {text[:400]}")
    if CANARY in text and not any("secret" in s or "link-out" in s or "outside" in s
                                  for k, v in args.items() if k not in ID_SLOTS for s in _strings(v)):
        problems.append("a file outside the workspace leaked through an id argument")
    if token in text or token in json.dumps(result.structured_content or {}):
        problems.append("the HF token is in the result")
    if tool in SPENDING and not result.is_error:
        status = (result.structured_content or {}).get("status")
        if status != "approval_required":
            problems.append(f"a spending tool went ahead without approval (status {status})")
    return problems


def _check(box: Sandbox, server: Server, tool: str, args: dict, schema: dict) -> list[str]:
    """Run one call and return what went wrong (empty when it behaved)."""
    watched = _files(box.root, box.allowed)
    spent = _spent(box) if tool in SPENDING else 0
    budget = WAIT_BUDGET_S if tool == "jobs_wait" else CALL_BUDGET_S
    result, raised, seconds = server.call(tool, args, budget)
    tally = TALLY.setdefault(tool, Tally())
    tally.calls += 1
    tally.slowest_s = max(tally.slowest_s, seconds)
    problems = [f"no tool result: {raised[:300]}"] if raised else []
    if result is not None:
        problems += _result_problems(tool, args, result, tally, box.hub.state.token)
    elif not raised:
        problems.append(f"no answer within {budget:.0f} s")
        if not server.alive():
            problems.append("the server stopped answering (restarted)")
            server.restart()
    log = server.new_stderr()
    if "Traceback" in log:
        problems.append("traceback on the server's stderr: " + log[log.index("Traceback"):][:600])
    if tool in SPENDING and _spent(box) != spent:
        problems.append("a spending tool created a job or a Hub repo without approval")
    named = _named(box, args, schema)
    stray = [p for p in _changed(watched, _files(box.root, box.allowed)) if not _allowed_write(p, named)]
    if stray:
        problems.append(f"wrote outside the allowed places: {stray[:5]}")
    if problems:
        tally.failures.append({"args": _shape(args), "problems": problems})
    return problems


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    from support.standin.hub_service import HubStandIn
    from support.standin.viewer_service import ViewerStandIn

    box = _workspace(tmp_path_factory.mktemp("fuzz"))
    hub, viewer = HubStandIn(run_jobs=False), ViewerStandIn()
    hub.__enter__()
    from support.remote import seed_folder

    seed_folder(hub, "alice/fuzz-sessions", box.workspace / "sessions", "dataset")  # what loop.yaml reads
    viewer.thread.start()  # its exit check (documented request shapes) is not what this module tests
    box.hub, box.viewer = hub, viewer
    yield box
    hub.__exit__(None, None, None)
    viewer.server.shutdown()
    viewer.server.server_close()


@pytest.fixture(scope="module")
def server(sandbox):
    srv = Server(sandbox)
    yield srv
    for job_id in _open_jobs(sandbox):  # jobs a fuzzed call started (preflight smoke jobs): stop them by id
        srv.call("jobs_cancel", {"job_id": job_id}, CALL_BUDGET_S)
    srv.stop()
    _report(srv)


def _report(server: Server) -> None:
    """The counts so far, per tool, when TUNEPACK_FUZZ_REPORT names a file (rewritten after every tool)."""
    if REPORT:
        summary = {"examples_per_tool": EXAMPLES, "restarts": server.restarts,
                   "tools": {k: {"calls": v.calls, "errors": v.errors, "slowest_s": round(v.slowest_s, 2),
                                 "failures": v.failures} for k, v in sorted(TALLY.items())}}
        Path(REPORT).write_text(json.dumps(summary, indent=1, ensure_ascii=True))


@pytest.fixture(scope="module")
def schemas(server) -> dict[str, dict]:
    return server.tools()


def tool_names() -> list[str]:
    from mcp_server.harness.toolsets import TOOLSETS

    return sorted({t for tools in TOOLSETS.values() for t in tools})


def test_every_tool_is_fuzzed(schemas):
    assert set(schemas) == set(tool_names()), "the fuzz list follows the toolsets; a tool is missing from one"


@pytest.mark.parametrize("tool", tool_names())
def test_fuzz_tool(tool, sandbox, server, schemas):
    schema = schemas[tool]
    strategy = Schemas(sandbox, tool, schema).arguments(schema)
    failures: list[tuple[dict, list[str]]] = []
    repo_before = _repo_state()

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=EXAMPLES <= 10,
              suppress_health_check=list(HealthCheck))
    @given(args=strategy)
    def fuzz(args):
        if tool in SPENDING:
            args = _needing_approval(args, schema)
        problems = _check(sandbox, server, tool, args, schema)
        if problems:
            failures.append((args, problems))

    fuzz()
    _report(server)
    assert server.alive(), f"the server stopped answering after fuzzing {tool}"
    changed = _repo_changes(repo_before, _repo_state())
    assert not changed, f"{tool} changed files in the repository: {changed[:5]}"
    shown = "\n".join(f"- {_shape(a)}: {'; '.join(p)}" for a, p in failures[:5])
    assert not failures, f"{len(failures)} of {TALLY[tool].calls} {tool} calls misbehaved:\n{shown}"
    assert server.restarts == 0, "the server had to be restarted"



FORGED = [{}, {"approval": {"approve": True}}, {"approval_token": "tp-approve-forged"},
          {"ctx": {"client_capabilities": {"elicitation": {}}}, "approved": True}]
PAID = {"pipeline_run": {"config_path": "config.yaml"},
        "jobs_submit": {"script_path": "script.py", "backend": "hf", "flavor": "a10g-small", "timeout_s": 1800},
        "sweep_submit": {"spec_path": "sweep.yaml"},
        "eval_start": {"name": "fuzz-run", "backend": "hf", "flavor": "a10g-small", "timeout_s": 1800},
        "registry_publish": {"name": "fuzz-run", "repo_id": "alice/fuzz-run", "private": False},
        "traces_push": {"repo": "alice/fuzz-traces", "paths": ["sessions"], "public": True},
        "loop_schedule": {"spec_path": "loop.yaml", "flavor": "a10g-small", "timeout_s": 1800}}


@pytest.mark.parametrize("tool", SPENDING)
def test_spending_tools_start_nothing_without_a_human_yes(tool, sandbox, server):
    """Well-formed paid calls, with a forged token or a smuggled `approval` argument: a quote or an error, never a
    job, a charge or a Hub repo."""
    assert set(PAID) == set(SPENDING)
    before = _spent(sandbox)
    for extra in FORGED:
        result, raised, _ = server.call(tool, {**PAID[tool], **extra}, CALL_BUDGET_S)
        assert result is not None, raised
        status = (result.structured_content or {}).get("status")
        assert result.is_error and "Fix:" in _text(result) or status == "approval_required", _text(result)[:500]
    assert _spent(sandbox) == before
    assert "Traceback" not in server.new_stderr()
