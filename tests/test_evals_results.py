"""Results → the card's table (complete, honest labels) and its model-index (clean scores only)."""

from __future__ import annotations

from huggingface_hub import ModelCard

from mcp_server.evals.results import apply_to_card, model_index, results_markdown
from mcp_server.registry.card import NOT_EVALUATED, RESULTS_END, RESULTS_START


def results(**over) -> dict:
    base = {
        "sandbox": "namespaces", "isolated": True, "temperature": 0.0, "limit": None, "ids": [],
        "tasks": [
            {"task": "humaneval", "metric": "pass@1", "n": 164, "samples": 1, "scores": {"base": 0.25, "adapter": 0.5},
             "status": {"base": "scored", "adapter": "scored"},
             "contamination": {"contaminated": 0, "n_problems": 164, "share": 0.0}},
            {"task": "mbpp", "metric": "pass@1", "n": 500, "samples": 1, "scores": {"base": 0.1, "adapter": None},
             "status": {"base": "scored", "adapter": "withheld"},
             "contamination": {"contaminated": 3, "n_problems": 500, "share": 0.006}},
        ],
    }
    base.update(over)
    return base


CARD = f"---\nlibrary_name: peft\ntags:\n- tunepack\n---\n\n# x\n\n## Evaluation results\n\n{RESULTS_START}\n{NOT_EVALUATED}{RESULTS_END}\n\n## Use\n"


def test_every_row_is_complete():
    text = results_markdown(results())
    assert "| humaneval | pass@1 | 164 | 0.250 [0.19, 0.32] | 0.500 [0.42, 0.58] | 0/164 (0.0%) |" in text
    assert "| mbpp | pass@1 | 500 | 0.100 [0.08, 0.13] | withheld (contaminated) | 3/500 (0.6%) |" in text
    assert "Withheld:" in text and "allow_contaminated" in text
    assert "unsafe-host" not in text


def test_labels_for_contaminated_unsandboxed_and_limited_runs():
    r = results(sandbox="unsafe-host", isolated=False, limit=5)
    r["tasks"][1]["scores"]["adapter"], r["tasks"][1]["status"]["adapter"] = 0.9, "contaminated"
    text = results_markdown(r)
    assert "0.900 [0.87, 0.92] ⚠ contaminated" in text
    assert "unsafe-host: generated code ran without isolation" in text
    assert "first 5 problems" in text


def test_model_index_has_only_clean_sandboxed_adapter_scores():
    entries = model_index(results())
    assert [(e.dataset_name, e.metric_value) for e in entries] == [("HumanEval", 0.5)]
    assert model_index(results(sandbox="unsafe-host", isolated=False)) == []


def test_the_card_gets_the_table_and_model_index_and_keeps_the_rest():
    card = apply_to_card(CARD, results(), name="my-adapter")
    assert NOT_EVALUATED.splitlines()[0] not in card and "| humaneval | pass@1 | 164 |" in card
    assert card.count(RESULTS_START) == 1 and "## Use" in card and "# x" in card
    data = ModelCard(card).data
    assert data.model_name == "my-adapter" and data.eval_results[0].metric_value == 0.5
    assert "tunepack" in data.tags
    again = apply_to_card(card, results(sandbox="unsafe-host", isolated=False), name="my-adapter")
    assert ModelCard(again).data.eval_results is None  # replaced, not appended


def _with_references(*labels: str) -> dict:
    """results() with reference models scored beside base and adapter (a teacher, a GRPO run's starting adapter),
    and a next-action row."""
    r = results(models=[{"label": "base"}, {"label": "adapter"}, *({"label": label} for label in labels)])
    scores = {"teacher": 0.75, "start": 0.375}
    r["tasks"][0]["scores"].update({label: scores[label] for label in labels})
    r["tasks"][0]["status"].update({label: "scored" for label in labels})
    r["tasks"][1]["scores"].update({label: None for label in labels})
    r["tasks"][1]["status"].update({label: "withheld" for label in labels})
    cell = {"tool_name": {"score": 0.5, "low": 0.4, "high": 0.6, "n": 40}}
    r["tasks"].append({"task": "next-action", "metric": "tool_name", "n": 40, "samples": 1,
                       "scores": {label: 0.5 for label in ("base", "adapter", *labels)},
                       "status": {label: "scored" for label in ("base", "adapter", *labels)},
                       "metrics": {"base": {"tool_name": {**cell["tool_name"], "score": 0.25}}, "adapter": cell,
                                   **{label: {"tool_name": {**cell["tool_name"], "score": scores[label]}}
                                      for label in labels}},
                       "baseline": {"tool": "bash", "metrics": {"tool_name": {**cell["tool_name"], "score": 0.1}}},
                       "heldout": {"groups": 4, "turns": 40}, "contamination": None})
    return r


def test_a_starting_adapter_gets_its_own_column_in_both_tables():
    text = results_markdown(_with_references("start"))
    assert "| Benchmark | Metric | n | Base model | Base + adapter | Starting adapter | Contamination |" in text
    assert "| humaneval | pass@1 | 164 | 0.250 [0.19, 0.32] | 0.500 [0.42, 0.58] | 0.375 [0.31, 0.45] | 0/164 (0.0%) |" in text
    assert "| mbpp | pass@1 | 500 | 0.100 [0.08, 0.13] | withheld (contaminated) | withheld (contaminated) | 3/500 (0.6%) |" in text
    assert "| Metric | n | Most-frequent-tool baseline | Base model | Base + adapter | Starting adapter |" in text
    assert "| tool_name | 40 | 0.100 [0.40, 0.60] | 0.250 [0.40, 0.60] | 0.500 [0.40, 0.60] | 0.375 [0.40, 0.60] |" \
        in text
    assert "Teacher" not in text


def test_reference_columns_appear_only_for_the_models_scored():
    both = results_markdown(_with_references("start", "teacher"))
    assert "| Base + adapter | Teacher | Starting adapter | Contamination |" in both  # teacher first, then start
    assert "| humaneval | pass@1 | 164 | 0.250 [0.19, 0.32] | 0.500 [0.42, 0.58] | 0.750 [0.68, 0.81] | 0.375 [0.31, 0.45] | 0/164 (0.0%) |" in both
    assert "| Base + adapter | Teacher | Starting adapter |\n" in both
    plain = results_markdown(_with_references())
    assert "Starting adapter" not in plain and "Teacher" not in plain
    assert "| Base model | Base + adapter | Contamination |" in plain and "| 0.500 [0.40, 0.60] |\n" in plain


def test_reference_models_never_enter_model_index():
    plain, both = _with_references(), _with_references("start", "teacher")  # the teacher scores above the adapter
    assert [(e.dataset_name, e.metric_value) for e in model_index(both)] == \
        [(e.dataset_name, e.metric_value) for e in model_index(plain)] == [("HumanEval", 0.5),
                                                                           ("Next action (held-out sessions)", 0.5)]
    card = apply_to_card(CARD, both, name="my-grpo")
    assert "| Starting adapter |" in card and "0.375" not in card.split("---", 2)[1]  # not in the metadata
    assert "0.75" not in card.split("---", 2)[1]


def test_a_model_that_never_calls_gets_a_note_under_its_perfect_stop():
    """Trial (a): base and adapter wrote nonsense and scored `stop 1.000`: every answer without a call counts as a
    right stop. The table says so when a model's `parses` is 0."""
    r = _with_references()
    row = r["tasks"][-1]
    silent = {"parses": {"score": 0.0, "low": 0.0, "high": 0.4, "n": 5}, "stop": {"score": 1.0, "low": 0.6, "high": 1.0,
                                                                                 "n": 5}}
    row["metrics"] = {"base": dict(silent), "adapter": {**silent, "parses": {**silent["parses"], "score": 0.4}}}
    text = results_markdown(r)
    assert "The base model wrote no tool call that parses: `stop` counts every answer without a call as right" in text
    row["metrics"]["adapter"] = dict(silent)
    assert "The base model and base + adapter wrote no tool call" in results_markdown(r)
    assert "wrote no tool call" not in results_markdown(_with_references())
