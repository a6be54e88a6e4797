"""The memory plan of SFT and GRPO runs (train/memory.py): the parameter counts it starts from, checked against
the published totals of the tutorial's models and against transformers' own classes; LoRA's size against PEFT's;
the plan in preflight (a failing line with the change that makes it fit) and in the card beside the peak."""

from __future__ import annotations

import copy

import pytest
import yaml
from test_card import SUMMARY
from test_card import manifest as card_manifest

from mcp_server.config import load_config
from mcp_server.methods import method_of
from mcp_server.registry.card import render_card
from mcp_server.train.memory import KNOWN, Batch, _count, architecture, lora_parameters, memory_plan


# Published totals, from each model card on the Hub:
# - Qwen/Qwen3-0.6B: "Number of Parameters: 0.6B; Number of Parameters (Non-Embedding): 0.44B"
# - meta-llama/Llama-3.2-1B: the model-information table gives 1.23B parameters for the 1B model
@pytest.fixture(autouse=True)
def empty_hub_cache(tmp_path, monkeypatch):
    """The plan reads a cached config.json when there is one: these tests start from none."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))


PUBLISHED = {"Qwen/Qwen3-0.6B": (0.6e9, 0.44e9), "meta-llama/Llama-3.2-1B-Instruct": (1.23e9, None)}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameters_match_the_published_totals(name):
    total, non_embedding = PUBLISHED[name]
    arch = architecture(name)
    assert "table" in arch["source"]
    assert abs(arch["parameters"] - total) / total < 0.02, arch["parameters"]
    if non_embedding:
        embeddings = arch["vocab_size"] * arch["hidden_size"]
        assert abs(arch["parameters"] - embeddings - non_embedding) / non_embedding < 0.02


@pytest.mark.parametrize("key", sorted(KNOWN))
def test_the_count_is_the_one_transformers_builds(key):
    """The same config through the family's own class (on the meta device: no memory, no download)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

    known = {k: v for k, v in KNOWN[key].items() if k != "qk_norm"}
    config, cls = (Qwen3Config, Qwen3ForCausalLM) if "qwen3" in key else (LlamaConfig, LlamaForCausalLM)
    with torch.device("meta"):
        model = cls(config(**known))
    unique = {id(p): p.numel() for p in model.parameters()}  # tied embeddings counted once
    assert _count(KNOWN[key]) == sum(unique.values())


def test_a_model_folder_counts_what_it_stores_and_lora_matches_peft(tiny_model_dir):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    arch = architecture(str(tiny_model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32)
    assert arch["parameters"] == sum(p.numel() for p in model.parameters())
    assert "model's files" in arch["source"] and arch["hidden_size"] == model.config.hidden_size
    for targets in ("all-linear", ["q_proj", "v_proj"]):
        peft_model = get_peft_model(copy.deepcopy(model), LoraConfig(r=8, target_modules=targets))
        trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
        assert lora_parameters(arch, 8, targets) == trainable, targets


def _config(tmp_path, data, **over) -> object:
    raw = {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": [str(data)]},
           "training": {"max_length": 1024, "per_device_train_batch_size": 4}}
    for section, values in over.items():
        if isinstance(values, dict):
            raw.setdefault(section, {}).update(values)
        else:
            raw[section] = values
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_config(path)


def test_the_plan_grows_with_the_batch_and_says_what_fits(tmp_path, short_data):
    cfg = _config(tmp_path, short_data)
    small = memory_plan(cfg, gpu_gb=24.0, cuda=True, batch=Batch(4, 1024))
    assert small["fits"] is True and small["weights"] == "4bit"  # quantization auto on a GPU = QLoRA
    embeddings = 151936 * 1024  # tied: one table, which 4-bit loading leaves in bf16
    assert small["weights_gb"] == pytest.approx(((small["parameters"] - embeddings) * 0.56 + embeddings * 2) / 2**30,
                                                abs=0.01)
    big = memory_plan(cfg, gpu_gb=16.0, cuda=True, batch=Batch(32, 8192))
    assert big["logits_gb"] == pytest.approx(small["logits_gb"] * 64, rel=0.01)
    assert big["fits"] is False and "halve training.per_device_train_batch_size" in big["advice"]
    assert f"needs about {big['total_gb']} GB" in big["advice"]
    cpu = memory_plan(cfg, gpu_gb=None, cuda=False, batch=Batch(4, 1024))
    assert cpu["fits"] is None and cpu["weights"] == "float32"
    assert cpu["weights_gb"] == pytest.approx(small["parameters"] * 4 / 2**30, rel=0.01)


def test_grpo_plans_completions_and_their_generation(tmp_path, short_data):
    cfg = _config(tmp_path, short_data, training={"method": "grpo", "gradient_accumulation_steps": 2},
                  grpo={"num_generations": 4, "max_completion_length": 512})
    batch = method_of(cfg).memory_batch(cfg)
    assert (batch.sequences, batch.length, batch.generated) == (4, 1024 + 512, 8)
    plan = method_of(cfg).memory(cfg, "hf", "a10g-small")
    assert plan["generation_gb"] > 0 and plan["gpu_gb"] == 24


def test_preflight_fails_a_run_that_cannot_fit_and_names_the_change(tmp_path, short_data):
    from mcp_server.methods import Check

    cfg = _config(tmp_path, short_data, model={"name": "google/gemma-4-E2B-it"}, quantization="none",
                  training={"max_length": 8192, "per_device_train_batch_size": 8})
    checks: list[Check] = []
    plan = method_of(cfg).memory(cfg, "hf", "t4-small", checks)
    (line,) = checks
    assert line.name == "memory" and line.status == "fail" and plan["fits"] is False
    assert "quantization: 4bit" in line.fix and "gradient_checkpointing" not in line.fix  # on by auto on a GPU
    assert f"= {plan['total_gb']} GB" in line.detail and "does not fit" in line.detail
    ok: list[Check] = []
    method_of(cfg).memory(cfg.model_copy(update={"training": cfg.training.model_copy(
        update={"max_length": 1024, "per_device_train_batch_size": 1})}), "hf", "a100-large", ok)
    assert ok[0].status == "pass" and "(fits)" in ok[0].detail


def test_the_card_shows_the_plan_beside_the_measured_peak():
    m = card_manifest()
    m["device"] = {"type": "cuda", "name": "NVIDIA A10G", "count": 1, "peak_memory_gb": 7.31}
    m["memory_plan"] = {"total_gb": 8.02, "weights_gb": 0.31, "weights": "4bit", "lora_gb": 0.15,
                        "activations_gb": 1.1, "logits_gb": 4.96, "generation_gb": 0.0, "micro_batch": 4,
                        "tokens_per_sequence": 1024}
    card = render_card(m, SUMMARY, name="x")
    line = next(ln for ln in card.splitlines() if ln.startswith("- Memory plan"))
    assert "8.02 GB = weights 0.31 (4bit)" in line and "logits 4.96" in line and "generation" not in line
    assert line.endswith("for 4 × 1024 tokens; measured peak 7.31 GB")
    assert "Memory plan" not in render_card(card_manifest(), SUMMARY, name="x")


def test_a_tiny_replica_on_this_machine_is_planned_against_its_ram(tmp_path, short_data):
    """Trial (a): a tiny:llama3 run was quoted with Llama's 128k vocabulary and "0.00 B parameters from unknown",
    and a CPU plan was never judged. The replica's own shape is used now, and a CPU run is held to the RAM."""
    from mcp_server.train.memory import plan_line
    from mcp_server.train.tiny_model import TINY_VOCAB

    cfg = _config(tmp_path, short_data, model={"name": "tiny:llama3"})
    plan = memory_plan(cfg, gpu_gb=None, cuda=False, batch=Batch(4, 1024), ram_gb=16.0)
    assert plan["vocab"] == TINY_VOCAB and 0 < plan["parameters"] < 10**7 and "replica" in plan["from"]
    assert plan["fits"] is True and "of 16 GB of this machine's RAM (fits)" in plan_line(plan)
    assert " M parameters" in plan_line(plan)
    huge = memory_plan(cfg, gpu_gb=None, cuda=False, batch=Batch(64, 65536), ram_gb=16.0)
    assert huge["fits"] is False and "this machine's RAM offers 14.4 usable" in huge["advice"]
    assert "quantization" not in huge["advice"]  # no 4-bit on a CPU
    checks: list = []
    local = method_of(cfg).memory(cfg, "local", None, checks)
    assert local["ram_gb"] and checks[0].status == "pass"
