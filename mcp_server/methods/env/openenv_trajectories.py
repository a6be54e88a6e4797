"""Scripted episodes of an OpenEnv environment (environment: openenv): the policy is each row's own list of
actions, sent in order through the environment's real server (started here as training starts it, or a running
one at a URL), turned into SFT rows for a warm start before environment GRPO.

    rows, report = openenv_trajectory_rows(rows, env="count_env:CountEnvironment", env_path="examples/openenv")
    rows, report = openenv_trajectory_rows(rows, base_url="http://127.0.0.1:8000")

A row is a GRPO task row (``prompt``; its other plain fields go to the environment's reset(), as in training)
plus ``actions``: a list of the tool's arguments, one object per call (e.g. ``[{"count": 3}]``), and optionally
``answer``: the final message after the calls (default: the environment's last reply). Wrong actions are allowed
on purpose: a warm start on right and wrong calls teaches the call's shape without making every rollout of a
GRPO group earn the same reward.

Each SFT row is ``{id, messages, tools, reward, verified}``: the user prompt with the environment's opening note
appended (as TRL appends reset()'s return), the assistant's calls, the environment's replies as tool messages,
the final answer; ``tools`` is the one tool's schema as TRL renders it for the model in training.
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError

SCRIPT_KEYS = ("actions", "answer")  # the script's own fields: never sent to the environment's reset()


def script_problems(rows: list[dict]) -> list[str]:
    """What keeps rows from being scripted (empty: nothing)."""
    out = []
    for i, row in enumerate(rows):
        actions = row.get("actions")
        if not row.get("prompt"):
            out.append(f"row {i} has no prompt")
        elif not isinstance(actions, list) or not actions or not all(isinstance(a, dict) for a in actions):
            out.append(f"row {i} has no 'actions' list of argument objects (e.g. [{{\"count\": 3}}])")
    return out


def scripted_episode(env_class: Any, row: dict) -> dict:
    """One episode: reset with the row's fields, each action as a call of the environment's tool, the answer."""
    from ...evals.kit.agent_loop import call_tool, opening

    tool = env_class.tool
    task = {k: v for k, v in row.items() if k not in SCRIPT_KEYS}
    env = env_class()
    messages = opening(task, env.reset(**task))
    reply = ""
    for arguments in row["actions"]:
        messages.append({"role": "assistant", "content": "",
                         "tool_calls": [{"type": "function", "function": {"name": tool, "arguments": arguments}}]})
        reply = call_tool(env, tool, arguments)
        messages.append({"role": "tool", "name": tool, "content": reply})
    messages.append({"role": "assistant", "content": str(row.get("answer") or reply)})
    env.get_reward()  # closes the session
    return {"id": str(row.get("id") or ""), "messages": messages, "env": env.reward}


def openenv_trajectory_rows(rows: list[dict], env: str | None = None, env_path: str | None = None,
                            base_url: str | None = None, tool: str = "act",
                            timeout_s: float = 5.0) -> tuple[list[dict], dict]:
    """(SFT rows of the scripted episodes, a report: episodes, verified, mean reward, the environment's counts)."""
    from transformers.utils import get_json_schema

    from ...evals.kit import openenv_env as oe

    bad = script_problems(rows)
    if bad:
        raise DataError(f"{len(bad)} of {len(rows)} rows cannot be scripted ({'; '.join(bad[:3])}).",
                        "give each row its prompt and 'actions': the tool's arguments, one object per call.")
    if bool(env) == bool(base_url):
        raise DataError("Name the environment once: a 'module:Class' (with its folder) or a running server's URL.",
                        "pass --openenv module:Class --env-path DIR, or --openenv http://HOST:PORT.")
    try:
        server = oe.start_server(env, env_path or ".", max_sessions=1) if env else \
            oe.Server(None, str(base_url).rstrip("/"))
    except oe.OpenEnvError as exc:
        raise DataError(exc.problem, exc.fix) from None
    try:
        budget = max(len(r["actions"]) for r in rows)
        env_class: Any = oe.session_class(server.base_url, tool=tool, budget=budget, timeout_s=timeout_s)
        episodes = [scripted_episode(env_class, row) for row in rows]
        tools = [get_json_schema(getattr(env_class, tool))]
        counts = env_class.counts
    except oe.OpenEnvError as exc:
        raise DataError(exc.problem, exc.fix) from None
    finally:
        server.close()
    out = [{"id": e["id"], "messages": e["messages"], "tools": tools, "reward": e["env"]["reward"],
            "verified": e["env"]["verified"]} for e in episodes]
    report = {"policy": "actions", "environment": env or base_url, "episodes": len(episodes),
              "verified": sum(e["env"]["verified"] for e in episodes),
              "mean_reward": round(sum(e["env"]["reward"] for e in episodes) / len(episodes), 4) if episodes else None,
              "tool_calls": counts["tool_calls"], "step_errors": counts["step_errors"],
              "sessions_opened": counts["sessions_opened"], "sessions_closed": counts["sessions_closed"]}
    return out, report
