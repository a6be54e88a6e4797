"""An OpenEnv environment as TRL's environment_factory sees one: a local server started in its own process (or a
running one at a URL), and a class whose one public tool sends the environment's Action and returns its observation.

    server = start_server("count_env:CountEnvironment", "/path/to/folder", max_sessions=8)
    Env = session_class(server.base_url, tool="act", budget=8, timeout_s=5.0)   # one instance per rollout (TRL pools)
    env = Env(); note = env.reset(id="t1", word="banana", letter="a"); env.act(count=3); env.get_reward()
    Env.counts   # sessions opened and closed, tool calls, refused calls, capacity errors, rewards by source

A session opens at reset() and closes when the rollout's reward is read (get_reward), so a run holds at most one
session per completion of a step. The reward is the sum of the rewards the server returned on the rollout's steps;
a rollout that never called the tool earns 0 (counted as unreached). Verified: the episode ended (done) with a
positive reward. The server's process gets no token: an empty environment but PATH, its import path and a
temporary HOME. Standard library only here; openenv-core is imported in the server and by the client.
"""

from __future__ import annotations

import inspect
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SERVER = r'''
import importlib, sys, typing

target, most, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
module, _, name = target.partition(":")
cls = getattr(importlib.import_module(module), name)  # first: a wrong target fails before the server's imports
import uvicorn
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment

found = None
for klass in cls.__mro__:
    for base in getattr(klass, "__orig_bases__", ()):
        origin = typing.get_origin(base)
        if isinstance(origin, type) and issubclass(origin, Environment) and len(typing.get_args(base)) >= 2:
            found = typing.get_args(base)[:2]
            break
    if found:
        break
if not found:
    sys.exit(f"TUNEPACK_OPENENV: {target} does not declare its types: subclass Environment[MyAction, "
             "MyObservation, MyState]")
app = create_fastapi_app(cls, found[0], found[1], max_concurrent_envs=most)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
'''

TYPES = {"string": str, "integer": int, "number": float, "boolean": bool}


class OpenEnvError(Exception):
    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem} Fix: {fix}")
        self.problem, self.fix = problem, fix


class Server:
    """A local OpenEnv server in its own process (loopback only), stopped by close()."""

    def __init__(self, proc: subprocess.Popen | None, base_url: str, log_path: str | None = None) -> None:
        self.proc, self.base_url, self.log_path = proc, base_url, log_path

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 2.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as reply:  # noqa: S310 (loopback or the user's URL)
        return json.loads(reply.read().decode())


def start_server(target: str, env_path: str, max_sessions: int, wait_s: float = 60.0) -> Server:
    """Start ``module:Class`` as an OpenEnv server on 127.0.0.1; its environment holds no token."""
    port = _free_port()
    home = tempfile.mkdtemp(prefix="tunepack-openenv-")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.path.abspath(env_path), "HOME": home,
           "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", "ENABLE_WEB_INTERFACE": "false"}
    log_path = os.path.join(home, "server.log")
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen([sys.executable, "-c", SERVER, target, str(max_sessions), str(port)], env=env,
                                cwd=home, stdout=log, stderr=subprocess.STDOUT)
    server = Server(proc, f"http://127.0.0.1:{port}", log_path)
    deadline = time.time() + wait_s
    while time.time() < deadline:
        if proc.poll() is not None:
            tail = open(log_path, encoding="utf-8").read()[-1500:]
            raise OpenEnvError(f"The OpenEnv server for {target} exited before listening: {tail.strip()}",
                               "check environment.env ('module:Class', the module on environment.env_path) and that "
                               "the class subclasses openenv's Environment[Action, Observation, State] (with "
                               "SUPPORTS_CONCURRENT_SESSIONS = True when max_sessions > 1).")
        try:
            _get(f"{server.base_url}/health")
            return server
        except OSError:
            time.sleep(0.2)
    server.close()
    raise OpenEnvError(f"The OpenEnv server for {target} did not answer /health within {wait_s:.0f} s.",
                       "start it by hand (python -c 'import uvicorn; ...') to see why, or point base_url at a server.")


def action_fields(base_url: str) -> tuple[dict, list[str], str]:
    """The Action's fields from the server's /schema: (properties, required, description)."""
    try:
        schema = _get(f"{base_url}/schema", timeout=10)["action"]
    except (OSError, KeyError, ValueError) as exc:
        raise OpenEnvError(f"The OpenEnv server at {base_url} gave no action schema ({exc}).",
                           "check environment.base_url (an OpenEnv server answers GET /schema).") from None
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k != "metadata"}
    return props, [k for k in schema.get("required") or [] if k in props], schema.get("description") or ""


def _tool_function(name: str, props: dict, required: list[str], description: str):
    """A method whose signature and docstring are the Action's fields (TRL and transformers read them)."""

    def tool(self, **arguments):
        return self._step(arguments)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    notes = []
    for field, spec in props.items():
        kind = TYPES.get(spec.get("type"), str)
        default = inspect.Parameter.empty if field in required else spec.get("default")
        params.append(inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind))
        notes.append(f"    {field}: {spec.get('description') or spec.get('title') or field}")
    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {**{p.name: p.annotation for p in params[1:]}, "return": str}
    first = " ".join((description or f"Send an action to the environment ({name}).").split())
    tool.__doc__ = f"{first}\n\nArgs:\n" + "\n".join(notes) + "\n\nReturns:\n    The environment's observation."
    return tool


def new_counts(tool: str) -> dict:
    return {"sessions_opened": 0, "sessions_closed": 0, "tool_calls": {tool: 0}, "refused_calls": 0,
            "capacity_errors": 0, "step_errors": 0, "rollouts": 0, "reached": 0, "verified": 0,
            "rewards": {"step": 0.0, "unreached": 0}}


class OpenEnvSession:
    """One rollout's session on the server (see the module's docstring); class attributes set by session_class."""

    base_url = ""
    tool = "act"
    budget = 8
    timeout_s = 5.0
    counts: dict = {}
    lock = threading.Lock()
    live: set = set()

    def __init__(self) -> None:
        self._client = None
        self._fresh()

    def _fresh(self) -> None:
        self.problem_id = ""
        self.calls = {self.tool: 0}
        self.refused = 0
        self.step_rewards: list[float] = []
        self.done = False
        self.reward: dict | None = None

    def _count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] += n

    def reset(self, **row) -> str:
        """A new episode: the row's fields (but its prompt) go to the environment's reset; returns its opening."""
        from openenv.core.generic_client import GenericEnvClient

        self._close()
        self._fresh()
        self.problem_id = str(row.get("id") or "")
        kwargs = {k: v for k, v in row.items() if k != "prompt" and isinstance(v, str | int | float | bool)}
        client = GenericEnvClient(base_url=self.base_url, message_timeout_s=self.timeout_s).sync()
        try:
            client.connect()
            self._client = client
            self._count("sessions_opened")
            self.live.add(self)
            result = client.reset(**kwargs)
        except Exception as exc:
            self._close()
            text = str(exc).lower()
            if "capacity" in text or "max_sessions" in text or type(exc).__name__.startswith("ConnectionClosed"):
                self._count("capacity_errors")
                raise OpenEnvError(f"The OpenEnv server refused or dropped a session (at capacity?): {exc}",
                                   "lower per_device_train_batch_size x gradient_accumulation_steps to the server's "
                                   "max_concurrent_envs (environment.max_sessions).") from None
            raise
        return "\n\n" + _text(result.observation)

    def _step(self, arguments: dict) -> str:
        if self._client is None or self.done:
            return "The episode is over: answer without calling the tool."
        if sum(self.calls.values()) >= self.budget:
            self.refused += 1
            return f"Error: the tool budget of {self.budget} calls is spent."
        self.calls[self.tool] += 1
        try:
            result = self._client.step(arguments)
        except Exception as exc:  # a malformed action (the server's validation) or a timeout: the model reads why
            self._count("step_errors")
            return f"Error: {exc}"
        self.step_rewards.append(float(result.reward or 0.0))
        self.done = bool(result.done)
        return _text(result.observation)

    def get_reward(self) -> float:
        """The sum of the step rewards; the session closes here (its result is kept for TRL's second read)."""
        if self.reward is None:
            total = round(sum(self.step_rewards), 6)
            reached = bool(self.step_rewards)
            self.reward = {"reward": total, "reached": reached, "verified": bool(self.done and total > 0),
                           "calls": dict(self.calls), "refused": self.refused, "steps": len(self.step_rewards),
                           "done": self.done}
            with self.lock:
                c = self.counts
                c["rollouts"] += 1
                c["reached"] += reached
                c["verified"] += self.reward["verified"]
                c["refused_calls"] += self.refused
                c["tool_calls"][self.tool] += self.calls[self.tool]
                c["rewards"]["step"] = round(c["rewards"]["step"] + total, 6)
                c["rewards"]["unreached"] += 0 if reached else 1
            self._close()
        return self.reward["reward"]

    @property
    def reached(self) -> bool:
        return bool(self.step_rewards)

    def _close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            self.live.discard(self)
            try:
                client.close()
            finally:
                self._count("sessions_closed")


def _text(observation) -> str:
    if isinstance(observation, dict):
        fields = {k: v for k, v in observation.items() if v not in (None, "", [], {})}
        if len(fields) == 1:
            return str(next(iter(fields.values())))
        return json.dumps(fields, ensure_ascii=False)
    return str(observation)


def session_class(base_url: str, tool: str = "act", budget: int = 8, timeout_s: float = 5.0) -> type:
    """The class TRL makes one instance of per concurrent rollout: the tool named ``tool`` with the Action's fields."""
    props, required, description = action_fields(base_url)
    return type("OpenEnv", (OpenEnvSession,), {
        "base_url": base_url, "tool": tool, "budget": budget, "timeout_s": timeout_s, "counts": new_counts(tool),
        "lock": threading.Lock(), "live": set(), tool: _tool_function(tool, props, required, description)})


def close_all(env_class: type[OpenEnvSession]) -> None:
    """Close every session still open (a run that stopped mid-batch)."""
    for env in list(env_class.live):
        env._close()


def tool_names(env_class: type[OpenEnvSession]) -> list[str]:
    return [env_class.tool]
