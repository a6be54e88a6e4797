"""The model card template, filled from a manifest shaped like the script's."""

import yaml

from mcp_server.registry import render_card, replace_results
from mcp_server.registry.card import RESULTS_END, RESULTS_START
from mcp_server.tracking import RunSummary


def manifest(model="Qwen/Qwen3-0.6B", used_4bit=True, hub_data=None):
    return {
        "tunepack_version": "0.1.0", "config_hash": "abc123", "script_sha256": "f" * 64, "git_commit": "1234abcd",
        "config": {"model": {"name": model, "revision": None},
                   "data": {"path": ["/x/rows.jsonl"], "hub_id": hub_data},
                   "lora": {"r": 16, "alpha": 32, "dropout": 0.05, "target_modules": "all-linear"},
                   "training": {"learning_rate": 2e-4, "per_device_train_batch_size": 4,
                                "gradient_accumulation_steps": 2, "max_length": 2048, "packing": False, "seed": 1}},
        "quantization": {"setting": "auto", "used_4bit": used_4bit, "reason": "auto: CUDA present"},
        "chat_template": "model (TRL training variant)",
        "dataset": {"format": "messages", "train_rows": 100, "eval_rows": 10, "fingerprint": "fp",
                    "files": [{"path": "/x/rows.jsonl", "bytes": 10, "sha256": "a" * 64}]},
        "mask_check": {"rows_checked": 100, "trained_token_share": 0.25, "longest_row_tokens": 900, "max_length": 2048,
                       "rows_truncated": 0, "rows_dropped": 0},
        "training": {"steps": 50, "train_runtime_s": 12.5},
        "device": {"type": "cuda", "name": "NVIDIA H200"},
        "trackio": {"project": "p", "run": "r", "space_id": None},
        "libraries": {"trl": "1.16.0", "peft": "0.21.2"},
    }


SUMMARY = RunSummary(project="p", run="r", points=3, first={"loss": 2.5, "mean_token_accuracy": 0.4},
                     last={"loss": 1.25, "mean_token_accuracy": 0.7}, minimum={"loss": 1.25, "mean_token_accuracy": 0.4},
                     maximum={"loss": 2.5, "mean_token_accuracy": 0.7})


def frontmatter(card: str) -> dict:
    return yaml.safe_load(card.split("---")[1])


def test_card_for_a_hub_model_with_qlora():
    card = render_card(manifest(hub_data="org/traces"), SUMMARY, name="agent-sft", version=3)
    meta = frontmatter(card)
    assert meta["base_model"] == "Qwen/Qwen3-0.6B" and meta["library_name"] == "peft"
    assert "qlora" in meta["tags"] and meta["datasets"] == ["org/traces"]
    assert "# agent-sft (v3)" in card
    assert "| loss | 2.5 | 1.25 | 1.25 | 2.5 |" in card
    assert "4-bit NF4 with double quantization" in card and "Hub dataset `org/traces`" in card
    assert "learning_rate: 0.0002" in card  # the config block
    assert RESULTS_START in card and RESULTS_END in card and "Not evaluated yet" in card


def test_card_for_a_local_model_has_no_base_model_key():
    meta = frontmatter(render_card(manifest(model="/models/tiny", used_4bit=False), SUMMARY, name="x"))
    assert "base_model" not in meta and "lora" in meta["tags"] and "datasets" not in meta


def test_results_section_is_replaced_in_place():
    card = render_card(manifest(), SUMMARY, name="x")
    table = "| Benchmark | Metric | Base model | Base + adapter |\n|---|---|---|---|\n| HumanEval | pass@1 | 0.10 | 0.20 |"
    updated = replace_results(card, table)
    assert "| HumanEval | pass@1 | 0.10 | 0.20 |" in updated and "Not evaluated yet" not in updated
    assert updated.split(RESULTS_START)[0] == card.split(RESULTS_START)[0]
    assert updated.split(RESULTS_END)[1] == card.split(RESULTS_END)[1]


def test_card_states_the_speed_choices_the_script_made():
    m = manifest()
    m["config"]["training"]["packing"] = "auto"
    m["speed"] = {"packing": True, "micro_batch": 1, "accumulation": 8, "attention": "sdpa", "checkpointing": False,
                  "optimizer": "adamw_torch_fused", "padding": {"waste": 0.0, "batches": 4}}
    card = render_card(m, SUMMARY, name="x")
    assert "packing True" in card and "packing auto" not in card  # what ran, not the setting
    assert "1 row(s) per micro-batch × 8 accumulation, attention sdpa" in card and "padding 0.0%" in card
    assert "Speed:" not in render_card(manifest(), SUMMARY, name="x")  # an older manifest has no speed section
