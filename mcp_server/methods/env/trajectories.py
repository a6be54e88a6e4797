"""Scripted episodes of the coding environment: a policy that is not a model, run through the real environment
(its sandbox, its tools, its reward), for warm-start SFT data and for checking the environment itself.

    episode = scripted_episode(row, "reference")      # run the reference, run the visible test, answer
    rows = trajectory_rows(rows, "reference")          # SFT rows {messages, tools, id, reward} of those episodes

Policies:
- ``reference``: run_python with the row's reference ``solution``, run_tests (the visible test passes), then
  answer with the code: earns the hidden tests' full pass rate. Code first, not a look at the failing test
  first: on the Qwen3 replica 100 SFT steps on these three-call episodes make it solve 17 of 32 problems in the
  environment (greedy), where the four-call shape with run_tests first solved none after 150;
- ``no-code``: answers with the reference solution in text, never running anything: the hidden tests are not
  run on text, so it earns 0 minus the no-code penalty.

The messages are what a model in the environment writes and reads (the tool results are the environment's own
replies), so an SFT warm start on them teaches the tool-call shape GRPO then improves.
"""

from __future__ import annotations

from ...evals.kit.agent_loop import call_tool, opening, tool_schemas
from ...evals.kit.coding_env import CodingEnv
from ...evals.kit.sandbox import Sandbox

POLICIES = ("reference", "no-code")


def _call(env: CodingEnv, messages: list[dict], name: str, arguments: dict, content: str = "") -> str:
    messages.append({"role": "assistant", "content": content,
                     "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}]})
    result = call_tool(env, name, arguments)
    messages.append({"role": "tool", "name": name, "content": result})
    return result


def scripted_episode(row: dict, policy: str) -> dict:
    """One episode of ``policy`` on ``row`` (CodingEnv.box must be a started sandbox)."""
    env = CodingEnv()
    messages = opening(row, env.reset(**row))
    solution = str(row.get("solution") or "")
    if policy == "reference":
        _call(env, messages, "run_python", {"code": solution})
        _call(env, messages, "run_tests", {})
        messages.append({"role": "assistant", "content": f"The function passes the visible test:\n\n```python\n"
                                                         f"{solution}\n```"})
    elif policy == "no-code":
        messages.append({"role": "assistant", "content": f"```python\n{solution}\n```"})
    else:
        raise ValueError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    return {"id": str(row.get("id") or ""), "messages": messages, "reward": env.get_reward(), "env": env.reward}


def trajectory_rows(rows: list[dict], policy: str = "reference", sandbox: str = "auto",
                    workers: int = 2, timeout_s: float = 5.0) -> tuple[list[dict], dict]:
    """(SFT rows of the scripted episodes, a report: episodes, mean reward, verified, tool calls)."""
    from concurrent.futures import ThreadPoolExecutor

    box = Sandbox(sandbox, workers=workers).start()
    previous = (CodingEnv.box, CodingEnv.timeout_s)
    CodingEnv.box, CodingEnv.timeout_s = box, timeout_s
    try:
        with ThreadPoolExecutor(workers) as pool:
            episodes = list(pool.map(lambda r: scripted_episode(r, policy), rows))
        tools = tool_schemas()
    finally:
        CodingEnv.box, CodingEnv.timeout_s = previous
        box.close()
    out = [{"id": e["id"], "messages": e["messages"], "tools": tools, "reward": e["reward"]} for e in episodes]
    verified = sum(e["env"]["verified"] for e in episodes)
    report = {"policy": policy, "episodes": len(episodes), "verified": verified, "sandbox": box.mode,
              "mean_reward": round(sum(e["reward"] for e in episodes) / len(episodes), 4) if episodes else None,
              "tool_calls": sum(sum(e["env"]["calls"].values()) for e in episodes)}
    return out, report
