"""``mbpp-agent``: MBPP's test split solved inside the coding environment, the loop environment GRPO trains in.

    rows = agent_rows(load_problems("mbpp", source, limit, ids))   # one visible test each, the rest hidden
    result = run_agent_model(gen, rows, family, settings, folder)   # {"metrics": {...}, "episodes": [...]}

Each problem is one episode (agent_loop.py): the prompt GRPO's rows show (the task, the signature, ONE visible
test), the environment's tools rendered by the model's own chat template, greedy decoding, each message read by
the family's parser, each call run in a sandboxed session of its own (coding_env.py) until an answer, the turn
limit or the token budget. The environment scores it: the hidden tests on the session's final program.

Metrics, each with n and a Wilson 95 % interval (``pass@1`` is the headline, as for the code tasks):
- ``pass@1``: every hidden test passed (the episode is *verified*);
- ``hidden_tests``: the hidden tests passed, over all of them;
- ``reached``: the episode ran at least one tool call in its environment;
- ``reward``: the environment's mean reward (pass rate minus the no-code and over-budget penalties), no interval.

Every episode is written as a Pi session (rollouts.py) with its verdict, split ``test``: the Hub's trace viewer
shows it, and ``traces convert --only-verified`` never trains on it (only ``train`` rollouts are kept).
"""

from __future__ import annotations

from pathlib import Path

from .agent_loop import run_episodes, tool_schemas
from .coding_env import CodingEnv
from .intervals import rate
from .problems import Problem, mbpp_prompt_row
from .rollouts import write_rollout

TASK = "mbpp-agent"
HEADLINE = "pass@1"
MAX_TURNS, TOOL_BUDGET = 6, 8  # the environment's defaults (GRPO's environment section)


def is_agent_task(task: str) -> bool:
    return task == TASK


def agent_rows(problems: list[Problem]) -> list[dict]:
    """MBPP problems as the coding environment's rows (one visible test, the others hidden and scored)."""
    rows = []
    for p in problems:
        raw = {"task_id": p.id.split("/", 1)[-1], "text": p.text, "code": p.solution,
               "test_list": list(p.test_examples), "test_setup_code": p.setup}
        rows.append(mbpp_prompt_row(raw))
    return rows


def agent_problems(rows: list[dict]) -> list[Problem]:
    """What the contamination check compares with the training data: the prompt shown, the hidden tests, the
    reference solution."""
    return [Problem(id=r["id"], benchmark=TASK, text=r["prompt"], tests="\n".join(r["tests"]),
                    solution=r.get("solution") or "") for r in rows]


def _completer(gen):
    """complete(batch, budgets) for the agent loop: greedy, each message cut at its own token budget."""

    def complete(batch, budgets):
        return gen.complete(batch, max(budgets), budgets=budgets)

    return complete


def tally(episodes: list[dict]) -> dict[str, dict]:
    n = len(episodes)
    hidden = sum(e["env"]["hidden"] for e in episodes)
    return {"pass@1": rate(sum(bool(e["env"]["verified"]) for e in episodes), n),
            "hidden_tests": rate(sum(e["env"]["hidden_passed"] for e in episodes), hidden),
            "reached": rate(sum(bool(e["env"]["reached"]) for e in episodes), n),
            "reward": {"score": round(sum(e["reward"] for e in episodes) / n, 4) if n else None, "n": n}}


def run_agent_model(gen, rows: list[dict], family: str, settings: dict, folder: Path | None) -> dict:
    """The metrics of one loaded model over the rows; each episode saved under ``folder`` when given.

    ``settings``: box (a started Sandbox), timeout_s (per program), max_tokens (per episode), label."""
    env_class = type("EvalCodingEnv", (CodingEnv,), {"box": settings["box"], "budget": TOOL_BUDGET,
                                                     "timeout_s": float(settings["timeout_s"])})
    count = (lambda text: len(gen.tokenizer(text, add_special_tokens=False)["input_ids"]))
    episodes = run_episodes(_completer(gen), rows, family, max_turns=MAX_TURNS, max_tokens=settings["max_tokens"],
                            count_tokens=count, env_class=env_class)
    if folder is not None:
        tools = tool_schemas()
        for k, episode in enumerate(episodes):
            env = episode["env"]
            meta = {"problem": episode["id"], "split": "test", "task": TASK, "model": settings["label"], "index": k,
                    "reward": episode["reward"], "verified": env["verified"], "hidden_passed": env["hidden_passed"],
                    "hidden": env["hidden"], "calls": env["calls"], "turns": episode["turns"],
                    "penalties": {"no_code": env["no_code_penalty"], "over_budget": env["over_budget_penalty"]}}
            write_rollout(folder, episode["messages"], tools, meta, model=settings["label"])
    return {"metrics": tally(episodes), "turns": round(sum(e["turns"] for e in episodes) / len(episodes), 3)
            if episodes else None}
