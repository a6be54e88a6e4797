"""Agent sessions written by a fixed policy, in the OpenAI chat trace format (one session per line: id, tools,
messages; what tests/fixtures/traces/openai/chat.jsonl has), for next-action tests: which tool the agent calls
follows from the user's request, so a small model can learn it, and a model that learned nothing scores no
better than the most-frequent-tool baseline.

    write_sessions(folder / "sessions.jsonl", 80, seed=0)   # 80 sessions, 2-3 requests each

Each request is a user message naming a task, one tool call whose tool and arguments follow from it, the tool
result, and a short answer. The four tools are declared with one argument and no description (the replicas'
2k-token vocabulary spends most of a short window on declarations otherwise), and used with frequencies
3:3:2:2, so "always call the most frequent tool" is right about 30 % of the time."""

from __future__ import annotations

import json
import random
from pathlib import Path

FILES = ["app.py", "util.py", "main.go", "api.ts", "cli.rs", "db.sql", "setup.cfg", "notes.md"]
WORDS = ["token", "cache", "retry", "parser", "limit", "user", "config", "timeout"]
COMMANDS = ["pytest -q", "make build", "ls src", "git status", "npm test", "cargo check"]
# tool -> (weight, argument, user request, argument value, tool result, answer)
POLICY = {
    "read": (3, "path", "Show me {f}.", "src/{f}", "two lines", "{f} has two lines."),
    "bash": (3, "cmd", "Run {c}.", "{c}", "ok", "It passed."),
    "grep": (2, "pattern", "Find {w}.", "{w}", "src/{f}:3", "{w} is in {f}."),
    "edit": (2, "path", "Fix {f}.", "src/{f}", "edited", "Fixed {f}."),
}
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}}}
    for name, (_, arg, *_rest) in POLICY.items()]


def _request(rng: random.Random, n: int) -> list[dict]:
    tool = rng.choices(list(POLICY), weights=[p[0] for p in POLICY.values()])[0]
    _, arg, ask, value, result, answer = POLICY[tool]
    words = {"f": rng.choice(FILES), "w": rng.choice(WORDS), "c": rng.choice(COMMANDS)}
    call_id = f"call_{n}"
    call = {"id": call_id, "type": "function",
            "function": {"name": tool, "arguments": json.dumps({arg: value.format(**words)})}}
    return [{"role": "user", "content": ask.format(**words)},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "name": tool, "content": result.format(**words)},
            {"role": "assistant", "content": answer.format(**words)}]


def session(index: int, rng: random.Random) -> dict:
    messages = [m for n in range(rng.randint(2, 3)) for m in _request(rng, n)]
    return {"id": f"policy-{index:03d}", "tools": TOOLS, "messages": messages}


def write_sessions(path: Path, count: int, seed: int = 0) -> Path:
    """``count`` sessions as one OpenAI chat trace file at ``path``; returns it."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(session(i, rng)) + "\n" for i in range(count)), encoding="utf-8")
    return path
