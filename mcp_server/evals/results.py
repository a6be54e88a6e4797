"""Eval results → the model card's results table and its ``model-index`` metadata.

    text = results_markdown(results)                     # the table that goes between the markers
    card = apply_to_card(card, results, name="my-adapter")  # table + model-index, rest untouched

Every row is complete and honest: task, metric, n problems (× samples), base score, adapter score
(or "withheld"), the contaminated share, and labels for contaminated or unsandboxed scores.
"""

from __future__ import annotations

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ..registry import replace_results

DATASETS = {
    "humaneval": ("openai_humaneval", "HumanEval"),
    "mbpp": ("google-research-datasets/mbpp", "MBPP"),
}


def _score(row: dict, label: str) -> str:
    status = row.get("status", {}).get(label)
    value = row.get("scores", {}).get(label)
    if status == "withheld":
        return "withheld (contaminated)"
    if value is None:
        return "—"
    text = f"{value:.3f}"
    if status == "contaminated":
        text += " ⚠ contaminated"
    return text


def _contamination(row: dict) -> str:
    c = row.get("contamination")
    if not c:
        return "not checked"
    return f"{c['contaminated']}/{c['n_problems']} ({100 * c['share']:.1f}%)"


def results_markdown(results: dict) -> str:
    lines = [
        "| Benchmark | Metric | n | Base model | Base + adapter | Contamination |",
        "|---|---|---|---|---|---|",
    ]
    for row in results["tasks"]:
        n = f"{row['n']}" + (f" × {row['samples']}" if row.get("samples", 1) > 1 else "")
        lines.append(f"| {row['task']} | {row['metric']} | {n} | {_score(row, 'base')} | {_score(row, 'adapter')} | "
                     f"{_contamination(row)} |")
    notes = [
        f"Sandbox: `{results['sandbox']}`" + ("" if results.get("isolated") else
                                             " — **unsafe-host: generated code ran without isolation**"),
        f"decoding: {'greedy' if not results.get('temperature') else 'temperature ' + str(results['temperature'])}",
    ]
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


def model_index(results: dict) -> list[EvalResult]:
    """Only clean, sandboxed adapter scores go into model-index (what the Hub shows and ranks)."""
    out = []
    for row in results["tasks"]:
        value = row.get("scores", {}).get("adapter")
        if value is None or row.get("status", {}).get("adapter") != "scored" or not results.get("isolated"):
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
