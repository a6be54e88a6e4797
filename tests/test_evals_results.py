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
    assert "| humaneval | pass@1 | 164 | 0.250 | 0.500 | 0/164 (0.0%) |" in text
    assert "| mbpp | pass@1 | 500 | 0.100 | withheld (contaminated) | 3/500 (0.6%) |" in text
    assert "Withheld:" in text and "allow_contaminated" in text
    assert "unsafe-host" not in text


def test_labels_for_contaminated_unsandboxed_and_limited_runs():
    r = results(sandbox="unsafe-host", isolated=False, limit=5)
    r["tasks"][1]["scores"]["adapter"], r["tasks"][1]["status"]["adapter"] = 0.9, "contaminated"
    text = results_markdown(r)
    assert "0.900 ⚠ contaminated" in text
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
