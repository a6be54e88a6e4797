"""Eval results → the model card's results table and its ``model-index`` metadata.

    text = results_markdown(results)                     # the table that goes between the markers
    card = apply_to_card(card, results, name="my-adapter")  # table + model-index, rest untouched

Every row is complete and honest: task, metric, n problems (× samples), base score, adapter score
(or "withheld") with its 95 % interval, the contaminated share, and labels for contaminated or unsandboxed scores.
"""

from __future__ import annotations

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ..registry import replace_results
from .kit.intervals import wilson

DATASETS = {
    "humaneval": ("openai_humaneval", "HumanEval"),
    "mbpp": ("google-research-datasets/mbpp", "MBPP"),
    "mbpp-agent": ("google-research-datasets/mbpp", "MBPP in the coding environment (mbpp-agent)"),
}
BFCL_DATASET = "gorilla-llm/Berkeley-Function-Calling-Leaderboard"
NEXT_ACTION = "next-action"
# models scored beside base and adapter, for comparison only: (label, column title), in column order
REFERENCES = (("teacher", "Teacher"), ("start", "Starting adapter"))


def _interval(row: dict, label: str) -> str:
    """The 95 % interval of the cell: the one recorded with the score, else Wilson's over n problems for a pass@1
    of one sample each (k of n passed)."""
    metric = ((row.get("metrics") or {}).get(label) or {}).get(row.get("metric") or "")
    if metric and metric.get("score") is not None:
        return f" [{metric['low']:.2f}, {metric['high']:.2f}]"
    value, n = (row.get("scores") or {}).get(label), row.get("n") or 0
    if value is None or not n or row.get("samples", 1) != 1 or row.get("metric") != "pass@1":
        return ""
    low, high = wilson(round(value * n), n)
    return f" [{low:.2f}, {high:.2f}]"


def _score(row: dict, label: str) -> str:
    status = row.get("status", {}).get(label)
    value = row.get("scores", {}).get(label)
    if status == "withheld":
        return "withheld (contaminated)"
    if value is None:
        return "—"
    text = f"{value:.3f}" + _interval(row, label)
    if status == "contaminated":
        text += " ⚠ contaminated"
    return text


def _contamination(row: dict) -> str:
    c = row.get("contamination")
    if not c:
        return "not checked"
    return f"{c['contaminated']}/{c['n_problems']} ({100 * c['share']:.1f}%)"


def results_markdown(results: dict) -> str:
    refs = reference_columns(results)
    lines = [
        "| Benchmark | Metric | n | Base model | Base + adapter |" + "".join(f" {title} |" for _, title in refs)
        + " Contamination |",
        "|---|---|---|---|---|" + "---|" * len(refs) + "---|",
    ]
    for row in results["tasks"]:
        if row["task"] == NEXT_ACTION:
            continue
        n = f"{row['n']}" + (f" × {row['samples']}" if row.get("samples", 1) > 1 else "")
        lines.append(f"| {row['task']} | {row['metric']} | {n} | {_score(row, 'base')} | {_score(row, 'adapter')} | "
                     + "".join(f"{_score(row, label)} | " for label, _ in refs) + f"{_contamination(row)} |")
    if len(lines) == 2:
        lines = []
    lines += next_action_markdown(results)
    notes = [f"Sandbox: `{results['sandbox']}`" + ("" if results.get("isolated") else
                                                  " — **unsafe-host: generated code ran without isolation**")
             ] if results.get("sandbox") else []
    notes.append(f"decoding: {'greedy' if not results.get('temperature') else 'temperature ' + str(results['temperature'])}")
    parsers = sorted({m.get("parser") for m in (results.get("loaded") or {}).values() if m.get("parser")})
    if parsers:
        notes.append(f"tool calls read with tunepack's {', '.join(parsers)} parser")
    if results.get("limit"):
        notes.append(f"limited to the first {results['limit']} problems of each task (a smoke run, not a full score)")
    if results.get("ids"):
        notes.append(f"only the problems {', '.join(results['ids'][:10])}" + (" …" if len(results["ids"]) > 10 else ""))
    render = results.get("render") or {}
    if render.get("script_sha256"):
        notes.append(f"eval script sha256 `{render['script_sha256'][:16]}…`")
    lines += ["", "; ".join(notes) + "."]
    if any(s == "withheld" for row in results["tasks"] for s in row.get("status", {}).values()):
        lines.append("\nWithheld: the training data overlaps these eval problems (n-gram check), so the score "
                     "would not measure generalisation. Remove the overlapping rows and retrain, or rerun the eval "
                     "with allow_contaminated to see a labelled score.")
    if any(s == "contaminated" for row in results["tasks"] for s in row.get("status", {}).values()):
        lines.append("\n⚠ contaminated: shown on request although the training data overlaps the eval problems.")
    return "\n".join(lines) + "\n"


def _cell(metric: dict | None) -> str:
    if not metric or metric.get("score") is None:
        return "—"
    return f"{metric['score']:.3f} [{metric['low']:.2f}, {metric['high']:.2f}]"


def reference_columns(results: dict) -> list[tuple[str, str]]:
    """(label, column title) of the reference models this eval also scored, each a column after the adapter's and
    never in model-index: a distilled adapter's teacher, a GRPO adapter's starting adapter."""
    scored = {m.get("label") for m in results.get("models") or []}
    return [(label, title) for label, title in REFERENCES if label in scored]


def _action_cell(row: dict, label: str, name: str) -> str:
    if (row.get("status") or {}).get(label) == "withheld":
        return "withheld"
    return _cell(((row.get("metrics") or {}).get(label) or {}).get(name))


def next_action_markdown(results: dict) -> list[str]:
    """The next-action table: each metric with n, the most-frequent-tool baseline, base and adapter (95 % CI), then
    the reference models scored (teacher, starting adapter)."""
    row = next((r for r in results["tasks"] if r["task"] == NEXT_ACTION), None)
    if row is None:
        return []
    base = (row.get("metrics") or {}).get("base") or {}
    adapter = (row.get("metrics") or {}).get("adapter") or {}
    refs = reference_columns(results)
    floor = (row.get("baseline") or {}).get("metrics") or {}
    held = row.get("heldout") or {}
    lines = ["", f"Next action on {held.get('turns', row['n'])} assistant turns of {held.get('groups', '?')} held-out "
             f"sessions (baseline: always call `{(row.get('baseline') or {}).get('tool')}`; 95 % intervals):", "",
             "| Metric | n | Most-frequent-tool baseline | Base model | Base + adapter |"
             + "".join(f" {title} |" for _, title in refs), "|---|---|---|---|---|" + "---|" * len(refs)]
    for name, ref in (adapter or base or floor).items():
        lines.append(f"| {name} | {ref['n']} | {_cell(floor.get(name))} | "
                     + " | ".join(_action_cell(row, label, name) for label in ("base", "adapter", *dict(refs))) + " |")
    silent = [title for title, m in (("the base model", base), ("base + adapter", adapter))
              if (m.get("parses") or {}).get("score") == 0 and (m.get("stop") or {}).get("score")]
    if silent:  # a model that never calls scores every no-call turn as a right stop, nonsense included
        lines += ["", f"{' and '.join(silent).capitalize()} wrote no tool call that parses: `stop` counts every answer "
                  "without a call as right, whatever it says; read it beside `parses` and `action_type`."]
    return lines


def _tool_index(row: dict, value: float, limited: bool) -> list[EvalResult]:
    if row["task"] == NEXT_ACTION:
        metrics = (row.get("metrics") or {}).get("adapter") or {}
        return [EvalResult(task_type="text-generation", dataset_type="held-out-sessions",
                           dataset_name="Next action (held-out sessions)", dataset_split="heldout",
                           metric_type=name, metric_value=round(float(m["score"]), 4),
                           metric_name=f"next-action {name} (n={m['n']})")
                for name, m in metrics.items() if m.get("score") is not None]
    category = row["task"][5:]
    return [EvalResult(task_type="text-generation", dataset_type=BFCL_DATASET, dataset_name=f"BFCL {category}",
                       dataset_split="test", metric_type="accuracy", metric_value=round(float(value), 4),
                       metric_name=f"accuracy (n={row['n']}{', limited' if limited else ''})")]


def model_index(results: dict) -> list[EvalResult]:
    """Only clean adapter scores go into model-index (what the Hub shows and ranks); code scores only sandboxed."""
    out = []
    limited = bool(results.get("limit") or results.get("ids"))
    for row in results["tasks"]:
        value = row.get("scores", {}).get("adapter")
        if value is None or row.get("status", {}).get("adapter") != "scored":
            continue
        if row["task"] == NEXT_ACTION or row["task"].startswith("bfcl:"):
            out += _tool_index(row, value, limited)
            continue
        if not results.get("isolated"):
            continue
        dtype, dname = DATASETS.get(row["task"], (row["task"], row["task"]))
        out.append(EvalResult(
            task_type="text-generation", dataset_type=dtype, dataset_name=dname, dataset_split="test",
            metric_type="pass@1", metric_value=round(float(value), 4),
            metric_name=f"pass@1 (n={row['n']}{', limited' if results.get('limit') or results.get('ids') else ''})",
        ))
    return out


def apply_to_card(card_text: str, results: dict, *, name: str) -> str:
    text = replace_results(card_text, results_markdown(results))
    card = ModelCard(text)
    data = card.data
    assert isinstance(data, ModelCardData), "a ModelCard's metadata is ModelCardData"
    entries = model_index(results)
    if entries:
        data.model_name = name
        data.eval_results = entries
    else:
        data.eval_results = None
    return str(card)


def compare_to_base(summary: dict) -> tuple[list[str], list[str]]:
    """(tasks the adapter beats the base on, tasks it does not) from an eval summary: each scored task's headline,
    adapter vs base, and vs the most-frequent-tool baseline where there is one."""
    better: list[str] = []
    not_better: list[str] = []
    for task in summary.get("tasks") or []:
        base, adapter = (task.get("scores") or {}).get("base"), (task.get("scores") or {}).get("adapter")
        if base is None or adapter is None:
            continue
        line = f"{task['task']} {task['metric']} {adapter:.3f} vs {base:.3f}"
        floor = (((task.get("baseline") or {}).get("metrics") or {}).get(task["metric"]) or {}).get("score")
        if floor is not None and adapter <= floor:
            line += f", not above always calling one tool ({floor:.3f})"
        (better if adapter > base and (floor is None or adapter > floor) else not_better).append(line)
    return better, not_better
