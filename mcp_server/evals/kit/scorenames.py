"""The names a score goes by in Trackio, ``sweep_select --metric`` and the card: one rule for all of them.

    scores_by_name(results_or_summary, "adapter") -> {"eval/humaneval/pass@1": 0.41,
        "eval/next_action/tool_name": 0.62, ..., "eval/bfcl/simple_python": 0.35}

Code tasks: ``eval/<task>/pass@1``; next-action: ``eval/next_action/<metric>`` for each metric
(action_type, parses, tool_name, args_valid, arg_keys, arg_values, stop); BFCL:
``eval/bfcl/<category>`` (accuracy); mbpp-agent: ``eval/mbpp-agent/<metric>`` (pass@1, hidden_tests,
reached, reward). A withheld or contaminated score has no name: nothing selects
on it.
"""

from __future__ import annotations


def row_names(row: dict, label: str) -> dict[str, float]:
    if (row.get("status") or {}).get(label, "scored") != "scored":
        return {}
    task = row["task"]
    if task in ("next-action", "mbpp-agent"):
        metrics = (row.get("metrics") or {}).get(label) or {}
        prefix = "eval/next_action" if task == "next-action" else f"eval/{task}"
        return {f"{prefix}/{m}": v["score"] for m, v in metrics.items() if v.get("score") is not None}
    value = (row.get("scores") or {}).get(label)
    if value is None:
        return {}
    if task.startswith("bfcl:"):
        return {f"eval/bfcl/{task[5:]}": value}
    return {f"eval/{task}/{row.get('metric') or 'pass@1'}": value}


def scores_by_name(results: dict | None, label: str = "adapter") -> dict[str, float]:
    out: dict[str, float] = {}
    for row in (results or {}).get("tasks") or []:
        out.update(row_names(row, label))
    return out


def known_prefixes(tasks: list[str]) -> list[str]:
    """The metric name prefixes a config's eval.tasks produce (``eval/humaneval/``, ``eval/next_action/``...)."""
    out = []
    for task in tasks:
        if task == "next-action":
            out.append("eval/next_action/")
        elif task == "mbpp-agent":
            out.append("eval/mbpp-agent/")
        elif task.startswith("bfcl:"):
            out.append(f"eval/bfcl/{task[5:]}")
        else:
            stem = task.rsplit("/", 1)[-1].removesuffix(".jsonl")
            out.append(f"eval/{stem}/")
    return out
