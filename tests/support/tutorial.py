"""The tutorial's inputs at CPU size: a folder of small raw Pi sessions (the "Hub dataset" of the tutorial, as
files), the tutorial's configs turned into their CPU twins (tiny:gemma4, local sessions, local jobs)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
TASKS = ["Fix the failing test in calc.py", "Add a docstring to parse()", "Rename helper to load_rows",
         "Remove the unused import in cli.py", "Make sum_all handle an empty list", "Add type hints to area()"]


def pi_session(index: int) -> list[dict]:
    """One Pi v3 session: a task, two tool-calling turns with their results, an answer."""
    task = TASKS[index % len(TASKS)]
    entries = [{"type": "session", "version": 3, "id": f"s{index}", "timestamp": "2026-11-01T10:00:00Z", "cwd": "/repo"}]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": task}]},
        {"role": "assistant", "stopReason": "toolUse", "model": "pi-model", "content": [
            {"type": "toolCall", "id": f"r{index}", "name": "read", "arguments": {"path": f"m{index}.py"}}]},
        {"role": "toolResult", "toolCallId": f"r{index}", "toolName": "read",
         "content": [{"type": "text", "text": f"def f{index}(x):\n    return x\n"}]},
        {"role": "assistant", "stopReason": "toolUse", "model": "pi-model", "content": [
            {"type": "toolCall", "id": f"e{index}", "name": "edit",
             "arguments": {"path": f"m{index}.py", "new": f"def f{index}(x):\n    return x + 1\n"}}]},
        {"role": "toolResult", "toolCallId": f"e{index}", "toolName": "edit",
         "content": [{"type": "text", "text": "ok"}]},
        {"role": "assistant", "stopReason": "stop", "model": "pi-model",
         "content": [{"type": "text", "text": f"Done: {task.lower()}."}]},
    ]
    return entries + chained(messages, f"m{index}")


def chained(messages: list[dict], prefix: str) -> list[dict]:
    """Pi v3 message entries, each the child of the one before."""
    entries, parent = [], None
    for n, message in enumerate(messages):
        entries.append({"type": "message", "id": f"{prefix}-{n}", "parentId": parent, "timestamp": "t",
                        "message": message})
        parent = f"{prefix}-{n}"
    return entries


FILES = ["calc.py", "parse.py", "cli.py", "rows.py", "area.py", "sums.py", "io.py", "report.py"]


def agent_session(index: int, requests: int = 3) -> list[dict]:
    """A longer Pi v3 session shaped like the tutorial's: per request, each model turn says what it does and then
    calls (read, edit, bash), the first one thinking first, the results come back, and the turn that ends the
    request answers; the next request follows as a user message (Gemma 4 then stops rendering the earlier
    reasoning, so a prompt is not always a prefix of the next). What the agent calls follows from the request."""
    import random

    rng = random.Random(index)
    entries = [{"type": "session", "version": 3, "id": f"a{index}", "timestamp": "2026-11-01T10:00:00Z", "cwd": "/repo"}]
    messages: list[dict] = []
    for r in range(requests):
        name, task = rng.choice(FILES), rng.choice(TASKS)
        messages.append({"role": "user", "content": [{"type": "text", "text": f"{task} (in {name})"}]})
        body = "".join(f"def f{k}(x):\n    return x + {k}\n\n" for k in range(rng.randint(3, 8)))
        steps = [("read", f"Let me read {name} first:", {"path": name}, body),
                 ("edit", f"I'll change {name} now:", {"path": name, "new": body.replace("+ 1", "- 1")}, "ok"),
                 ("bash", "Now run its tests:", {"command": f"pytest -q tests/test_{name}"}, f"{rng.randint(2, 9)} passed")]
        for n, (tool, text, arguments, result) in enumerate(steps[:rng.randint(2, 3)]):
            call = f"c{r}{n}"
            thought = [{"type": "thinking", "thinking": f"{tool} {name} next"}] if n == 0 else []
            messages.append({"role": "assistant", "stopReason": "toolUse", "model": "pi-model", "content": [
                *thought, {"type": "text", "text": text},
                {"type": "toolCall", "id": call, "name": tool, "arguments": arguments}]})
            messages.append({"role": "toolResult", "toolCallId": call, "toolName": tool,
                             "content": [{"type": "text", "text": result}]})
        messages.append({"role": "assistant", "stopReason": "stop", "model": "pi-model",
                         "content": [{"type": "text", "text": f"Done: {task.lower()} in {name}."}]})
    return entries + chained(messages, f"a{index}")


def write_agent_sessions(folder: Path, count: int, requests: int = 3) -> Path:
    """``count`` sessions of ``agent_session`` as Pi files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"agent-{i:03d}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in agent_session(i, requests)))
    return folder


def write_sessions(folder: Path, count: int = 12) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"session-{i:02d}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in pi_session(i)))
    return folder


def session_files(count: int = 12) -> dict[str, bytes]:
    return {f"sessions/session-{i:02d}.jsonl": "".join(json.dumps(e) + "\n" for e in pi_session(i)).encode()
            for i in range(count)}


def cpu_twin(sessions: Path, project: str, folder: Path) -> Path:
    """examples/gemma4-pi-traces.yaml on CPU: tiny:gemma4, the local sessions, a local job, 3 HumanEval problems.
    192 tokens: every session is longer (about 220), so each one becomes windows and every turn still fits."""
    raw = yaml.safe_load((REPO / "examples" / "gemma4-pi-traces.yaml").read_text())
    data = {k: v for k, v in raw["data"].items() if k not in ("hub_id", "revision")}
    twin = {**raw, "model": {"name": "tiny:gemma4"}, "quantization": "none",
            "data": {**data, "path": str(sessions), "eval_fraction": 0.2},
            "training": {**raw["training"], "max_steps": 12, "max_length": 192, "per_device_train_batch_size": 4,
                         "gradient_accumulation_steps": 1, "learning_rate": 0.01, "logging_steps": 2,
                         "save_steps": None, "gradient_checkpointing": False},
            "tracking": {"project": project}, "output": {"name": project}, "job": {"backend": "local"},
            "eval": {"tasks": ["humaneval"], "limit": 3, "max_tokens": 24, "backend": "hf", "sandbox": "namespaces"}}
    path = folder / "gemma4-pi-traces.cpu.yaml"
    path.write_text(yaml.safe_dump(twin, sort_keys=False))
    return path


def cpu_sweep(config: Path, folder: Path) -> Path:
    """examples/gemma4-pi-sweep.yaml on CPU: the twin as base, local, no budget needed; its lr × rank grid cut to
    2 × 1 (two runs show the canary gate, the ranking and the pick; CI's time budget pays for no more)."""
    raw = yaml.safe_load((REPO / "examples" / "gemma4-pi-sweep.yaml").read_text())
    spec = {**{k: v for k, v in raw.items() if k not in ("backend", "flavor", "timeout_s", "budget_usd")},
            "base": str(config), "grid": {"training.learning_rate": [0.003, 0.01], "lora.r": [8]},
            "set": {"eval.tasks": [], "training.max_steps": 8}, "max_concurrent": 2, "canary": {"steps": 2}}
    path = folder / "gemma4-pi-sweep.cpu.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path
