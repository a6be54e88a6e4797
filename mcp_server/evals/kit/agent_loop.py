"""Episodes of a model in the coding environment, outside the trainer: the held-out curve of an environment
GRPO run and the ``mbpp-agent`` eval run the loop TRL's tool loop runs in training — the prompt with the
environment's note, rendered with the tools by the model's own chat template; each message read by the
family's parser (toolcalls.py); each call run in the episode's environment, its result a ``tool`` message;
until a message without a call, ``max_turns`` messages, or ``max_tokens`` generated in all.

    episodes = run_episodes(complete, rows, family, max_turns=6, max_tokens=512)
    # complete(batch: [(messages, tools)], budget) -> [text with special tokens], one per item

Each episode: {"id", "messages" (user, assistant, tool...), "reward" (the environment's), "env" (its record:
hidden tests passed, penalties, calls), "turns", "tokens"}. Standard library only.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .coding_env import TOOLS, CodingEnv
from .toolcalls import parse


def tool_schemas() -> list[dict]:
    """The environment's tools as the chat template renders them (what TRL builds from the methods)."""
    from transformers.utils import get_json_schema

    env = CodingEnv()
    return [get_json_schema(getattr(env, name)) for name in TOOLS]


def opening(row: dict, note: str) -> list[dict]:
    """The task's conversation with the environment's note after its last message (as TRL adds reset()'s)."""
    prompt = row["prompt"]
    if isinstance(prompt, list):
        *head, last = [dict(m) for m in prompt]
        return [*head, {**last, "content": str(last.get("content") or "") + note}]
    return [{"role": "user", "content": str(prompt) + note}]


def call_tool(env, name: str, arguments) -> str:
    """A call as TRL's loop makes it: the method by name with the arguments as keywords; a failure is its text.
    The tools: the coding environment's, or an OpenEnv session's one (``env.tool``)."""
    if name not in (TOOLS if isinstance(env, CodingEnv) else (getattr(env, "tool", ""),)):
        return str({"error": f"Tool {name} not found."})
    method = getattr(env, name)
    try:
        if not isinstance(arguments, dict):
            raise TypeError(f"arguments must be an object, not {type(arguments).__name__}")
        inspect.signature(method).bind(**arguments)
        return str(method(**arguments))
    except Exception as exc:  # the model's call is wrong: it gets the error, as in training
        return str({"error": str(exc)})


def run_episodes(complete: Callable, rows: list[dict], family: str, max_turns: int = 6,
                 max_tokens: int = 512, count_tokens: Callable[[str], int] = len,
                 env_class: type = CodingEnv, tools: list[dict] | None = None) -> list[dict]:
    """One episode per row, batched turn by turn (every live episode writes its next message together);
    ``env_class`` carries the sandbox, the tool budget and the time limit (class attributes); ``tools``: its
    schemas when it is not the coding environment."""
    tools = tools or tool_schemas()
    episodes: list[dict[str, Any]] = []
    for row in rows:
        env = env_class()
        note = env.reset(**row)
        episodes.append({"id": str(row.get("id") or ""), "messages": opening(row, note), "env_obj": env, "turns": 0,
                         "tokens": 0, "done": False})
    for _ in range(max_turns):
        live = [e for e in episodes if not e["done"]]
        if not live:
            break
        texts = complete([(e["messages"], tools) for e in live], [max(1, max_tokens - e["tokens"]) for e in live])
        for episode, text in zip(live, texts, strict=True):
            _advance(episode, text, family, max_tokens, count_tokens)
    out = []
    for episode in episodes:
        env = episode.pop("env_obj")
        episode.pop("done")
        out.append({**episode, "reward": env.get_reward(), "env": env.reward})
    return out


def _advance(episode: dict, text: str, family: str, max_tokens: int, count_tokens: Callable[[str], int]) -> None:
    """Append the model's message (and run its calls); mark the episode done when it answered or ran out."""
    env, parsed = episode["env_obj"], parse(family, text)
    episode["turns"] += 1
    episode["tokens"] += count_tokens(text)
    calls = parsed.calls if parsed.well_formed else []
    message: dict = {"role": "assistant", "content": parsed.content if parsed.well_formed else text}
    if calls:
        message["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in calls]
    episode["messages"].append(message)
    for call in calls:
        result = call_tool(env, call.name, call.arguments)
        episode["messages"].append({"role": "tool", "name": call.name, "content": result})
        episode["tokens"] += count_tokens(result)
    episode["done"] = not calls or episode["tokens"] >= max_tokens
