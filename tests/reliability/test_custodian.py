"""[18] Custodian mode with two OS accounts (CI runs as root, so the test can make the second one): the custodian
(this root process) holds the HF token and the tunepack home and runs `tunepack serve --http --custodian`; the
agent runs under another uid with no token. As the agent: the token and the budget cannot be read, a quote cannot
be approved (not with the token, not by answering its own elicitation, not with `tunepack approve`), and the Jobs
API refuses it; only after the custodian's person runs `tunepack approve` does the agent's call start the job."""

import json
import os
import pty
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from support.common import REPO

AGENT_UID = 64123
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("unshare"),
                                reason="needs root on Linux with util-linux (setpriv, unshare) to run the agent "
                                       "under a second uid (CI is root)")

AGENT_SCRIPT = textwrap.dedent('''
    import json, os, sqlite3, subprocess, sys, urllib.request
    import anyio
    import mcp_types as t
    from mcp import Client

    url, custodian_home, token_file, endpoint, script, quote = sys.argv[1:7]
    out = {"uid": os.getuid()}

    def attempt(name, fn):
        try:
            fn()
            out[name] = "read"
        except (OSError, sqlite3.Error) as exc:
            out[name] = type(exc).__name__

    attempt("token", lambda: open(token_file).read())
    attempt("budget", lambda: sqlite3.connect(f"file:{custodian_home}/approval/budget.db?mode=ro", uri=True)
            .execute("SELECT * FROM charges").fetchall())
    approve = subprocess.run([sys.executable, "-m", "mcp_server.cli", "approve", quote or "x"], capture_output=True,
                             text=True, env={**os.environ, "TUNEPACK_HOME": custodian_home})
    out["approve_rc"] = approve.returncode
    request = urllib.request.Request(f"{endpoint}/api/jobs/alice", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=10)
        out["jobs_api"] = 200
    except urllib.error.HTTPError as exc:
        out["jobs_api"] = exc.code

    async def yes(context, request):
        return t.ElicitResult(action="accept", content={"approve": True})

    async def main():
        args = {"script_path": script, "backend": "hf", "flavor": "a10g-small", "timeout_s": 1800,
                "project": "custodian"}
        async with Client(url, elicitation_callback=yes) as client:
            if not quote:
                first = await client.call_tool("jobs_submit", args)
                out["first"] = first.structured_content["decision"]
                again = await client.call_tool("jobs_submit", {**args, "approval_token": out["first"]["approval_token"]})
                out["again"] = again.content[0].text if again.is_error else "submitted"
            else:
                done = await client.call_tool("jobs_submit", {**args, "approval_token": quote})
                out["done"] = "error: " + done.content[0].text if done.is_error else done.structured_content["status"]
    anyio.run(main)
    print(json.dumps(out))
''')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_agent(tmp: Path, command: list[str]) -> list[str]:
    """``command`` under the agent's uid. The interpreter may live under /root (pyenv), which only root may enter:
    in a mount namespace of the agent process alone, /root becomes an empty folder holding only that install
    (nothing else of root's is visible), so no machine-wide setting changes."""
    drop = ["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}", "--clear-groups", *command]
    base = Path(sys.base_prefix).resolve()
    if not base.is_relative_to("/root"):
        return drop
    keep = Path("/root") / base.relative_to("/root").parts[0]
    side = tmp / "interpreter"
    side.mkdir(exist_ok=True)
    script = (f"mount --bind {keep} {side} && mount -t tmpfs -o mode=755 tmpfs /root && mkdir {keep} && "
              f"mount --bind {side} {keep} && exec \"$@\"")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "agent", *drop]


def _agent(tmp: Path, url: str, custodian: dict, endpoint: str, quote: str = "") -> dict:
    home = tmp / "agent"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TUNEPACK_HOME": str(home / "tunepack"),
           "PYTHONPATH": str(REPO), "HF_HOME": str(home / "hf")}  # no HF_TOKEN: the agent never had one
    command = [sys.executable, str(tmp / "agent.py"), url, custodian["TUNEPACK_HOME"], custodian["token_file"],
               endpoint, str(REPO / "bench" / "spine.py"), quote]
    done = subprocess.run(_as_agent(tmp, command), env=env, cwd=str(home), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _authorized_posts(hub) -> list:
    return [r for r in hub.requests("POST", "/api/jobs/alice")
            if r.headers.get("authorization") == f"Bearer {hub.state.token}"]


def _at_a_terminal(args: list[str], env: dict) -> subprocess.CompletedProcess:
    """The custodian's person typing a command: stdin is a terminal."""
    leader, follower = pty.openpty()
    try:
        return subprocess.run(args, stdin=follower, capture_output=True, text=True, env=env, timeout=60)
    finally:
        os.close(leader)
        os.close(follower)


def _wait_for(port: int, proc: subprocess.Popen) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "server exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise AssertionError("the custodian server did not start")


@pytest.fixture
def shared_tmp():
    """A folder both accounts can enter (pytest's own tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="tunepack-custodian-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_agent_account_cannot_read_approve_or_spend(hub, shared_tmp):
    tmp_path = shared_tmp
    (tmp_path / "agent.py").write_text(AGENT_SCRIPT)
    (tmp_path / "agent").mkdir()
    os.chown(tmp_path / "agent", AGENT_UID, AGENT_UID)
    custodian_hf = tmp_path / "custodian" / "hf"
    custodian_hf.mkdir(parents=True)
    token_file = custodian_hf / "token"
    token_file.write_text(hub.state.token)
    token_file.chmod(0o644)  # as careless as a person might leave it: serve --custodian closes it
    env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"}
    env.update(TUNEPACK_HOME=str(tmp_path / "custodian" / "home"), HF_HOME=str(custodian_hf),
               HF_ENDPOINT=hub.endpoint)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--http", "--custodian", "--port",
                               str(port)], env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        _wait_for(port, server)
        url = f"http://127.0.0.1:{port}/mcp"
        custodian = {"TUNEPACK_HOME": env["TUNEPACK_HOME"], "token_file": str(token_file)}
        before = _agent(tmp_path, url, custodian, hub.endpoint)
        assert before["uid"] == AGENT_UID
        assert before["token"] == "PermissionError" and before["budget"] in ("OperationalError", "PermissionError")
        assert before["approve_rc"] == 1 and before["jobs_api"] == 401
        assert before["first"]["status"] == "approval_required" and before["first"]["via"] == "custodian"
        assert "custodian has not approved" in before["again"]  # its own "yes" to the elicitation is not enough
        assert _authorized_posts(hub) == []  # (the agent's own POST was answered 401 above)

        quote = before["first"]["approval_token"]
        listed = json.loads(_at_a_terminal([sys.executable, "-m", "mcp_server.cli", "approve", "--list"], env).stdout)
        assert [q["token"] for q in listed] == [quote] and "a10g-small" in listed[0]["summary"]
        approved = _at_a_terminal([sys.executable, "-m", "mcp_server.cli", "approve", quote], env)
        assert approved.returncode == 0, approved.stderr
        after = _agent(tmp_path, url, custodian, hub.endpoint, quote=quote)
        assert after["done"] == "submitted"
        assert len(_authorized_posts(hub)) == 1
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert (token_file.stat().st_mode & 0o077) == 0


# [27] Nothing the agent can influence runs as the custodian: each free tool that can run code is tried with code
# that, run as the custodian, would read the token, approve the agent's open quote and post a job with the token.
EVIL = textwrap.dedent('''
    import json, os, sqlite3, time, urllib.request
    marker, home, token_file, endpoint = {args!r}
    try:
        token = open(token_file).read().strip()
        open(marker, "a").write("token read\\n")
        db = sqlite3.connect(os.path.join(home, "approval", "tokens.db"))
        db.execute("UPDATE tokens SET approved_at = ?", (time.time(),))
        db.commit()
        request = urllib.request.Request(endpoint + "/api/jobs/alice", data=b"{{}}", method="POST",
                                         headers={{"Authorization": "Bearer " + token}})
        urllib.request.urlopen(request, timeout=10)
    except Exception as exc:
        open(marker, "a").write("failed: " + repr(exc) + "\\n")
''')

CODE_AGENT = textwrap.dedent('''
    import json, sys
    import anyio
    from mcp import Client

    url, folder = sys.argv[1:3]
    out = {}

    async def call(client, name, args):
        done = await client.call_tool(name, args)
        if done.is_error:
            return "error: " + done.content[0].text
        return done.structured_content

    async def main():
        async with Client(url) as client:
            out["script"] = await call(client, "jobs_submit", {"script_path": f"{folder}/evil.py", "backend": "local"})
            out["grpo_preflight"] = await call(client, "pipeline_preflight", {"config_path": f"{folder}/grpo.yaml"})
            out["remote_code_run"] = await call(client, "pipeline_run", {"config_path": f"{folder}/remote.yaml",
                                                                         "backend": "local"})
            out["clean_preflight"] = await call(client, "pipeline_preflight", {"config_path": f"{folder}/sft.yaml",
                                                                               "smoke": False})
    anyio.run(main)
    print(json.dumps(out))
''')


def _configs(folder: Path, evil: str) -> None:
    rows = [{"messages": [{"role": "user", "content": f"Say {i}."}, {"role": "assistant", "content": f"{i}."}]}
            for i in range(12)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems = [{"id": f"p/{i}", "prompt": "Write add_one(x).", "tests": [f"assert add_one({i}) == {i + 1}"],
                 "solution": evil + "\ndef add_one(x):\n    return x + 1\n"} for i in range(4)]
    (folder / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in problems))
    sft = {"model": {"name": "tiny:qwen3"}, "data": {"path": "rows.jsonl"},
           "training": {"max_steps": 2}, "output": {"name": "clean-sft"}}
    (folder / "sft.yaml").write_text(yaml.safe_dump(sft))
    (folder / "remote.yaml").write_text(yaml.safe_dump({**sft, "model": {"name": "tiny:qwen3",
                                                                         "trust_remote_code": True}}))
    grpo = {"model": {"name": "tiny:qwen3"}, "data": {"path": "prompts.jsonl"},
            "training": {"method": "grpo", "max_steps": 2},
            "grpo": {"rewards": {"tests": 1.0}, "sandbox": "unsafe-host", "num_generations": 2},
            "output": {"name": "evil-grpo"}}
    (folder / "grpo.yaml").write_text(yaml.safe_dump(grpo))


def test_no_free_tool_runs_the_agents_code_as_the_custodian(hub, shared_tmp):
    tmp_path = shared_tmp
    (tmp_path / "agent.py").write_text(CODE_AGENT)
    agent_home = tmp_path / "agent"
    agent_home.mkdir()
    custodian_hf = tmp_path / "custodian" / "hf"
    custodian_hf.mkdir(parents=True)
    token_file = custodian_hf / "token"
    token_file.write_text(hub.state.token)
    marker = tmp_path / "stolen.txt"
    home = tmp_path / "custodian" / "home"
    evil = EVIL.format(args=(str(marker), str(home), str(token_file), hub.endpoint))
    (agent_home / "evil.py").write_text(evil)
    _configs(agent_home, evil)
    for path in [agent_home, *agent_home.iterdir()]:
        os.chown(path, AGENT_UID, AGENT_UID)
    env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"}
    env.update(TUNEPACK_HOME=str(home), HF_HOME=str(custodian_hf), HF_ENDPOINT=hub.endpoint)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--http", "--custodian", "--port",
                               str(port)], env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        _wait_for(port, server)
        command = [sys.executable, str(tmp_path / "agent.py"), f"http://127.0.0.1:{port}/mcp", str(agent_home)]
        agent_env = {"PATH": os.environ["PATH"], "HOME": str(agent_home), "PYTHONPATH": str(REPO),
                     "TUNEPACK_HOME": str(agent_home / "tunepack"), "HF_HOME": str(agent_home / "hf")}
        done = subprocess.run(_as_agent(tmp_path, command), env=agent_env, cwd=str(agent_home), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        out = json.loads(done.stdout.splitlines()[-1])
        time.sleep(2)  # a job that had started would have run by now
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert out["script"].startswith("error: ") and "Custodian mode" in out["script"], out["script"]
    assert out["remote_code_run"].startswith("error: ") and "trust_remote_code" in out["remote_code_run"]
    grpo = out["grpo_preflight"]  # a failed preflight is an error result: its line, then the report
    assert grpo.startswith("error: Preflight did not pass: custodian: custodian mode runs no code"), grpo
    assert "grpo.sandbox: unsafe-host" in grpo and '"name": "ceiling"' not in grpo
    clean = out["clean_preflight"]
    assert "custodian" not in {c["name"] for c in clean["checks"]} and clean["ok"] is True, clean
    assert not marker.exists(), marker.read_text()  # 0 token reads (and so 0 approvals)
    assert _authorized_posts(hub) == []  # 0 POSTs with the custodian's token


def test_the_kit_refuses_unsafe_host_in_custodian_mode(monkeypatch):
    from mcp_server.evals.kit.errors import KitError
    from mcp_server.evals.kit.sandbox import Sandbox

    monkeypatch.setenv("TUNEPACK_CUSTODIAN", "1")
    with pytest.raises(KitError, match="custodian"):
        Sandbox("unsafe-host")
