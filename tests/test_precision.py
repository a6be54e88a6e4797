"""The rendered script's hardware decisions, run for every flavor in flavors.yaml: bf16 only where the GPU
has it (compute capability 8.0+), fp16 on T4, float32 on CPUs; the 4-bit compute dtype follows the weights."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from mcp_server.config import parse_config
from mcp_server.jobs.pricing import hf_flavors
from mcp_server.methods import write_script


@pytest.fixture(scope="module")
def script(tmp_path_factory, short_data):
    path = write_script(parse_config({"model": {"name": "org/model"}, "data": {"path": str(short_data)}}),
                        tmp_path_factory.mktemp("precision") / "train.py")
    spec = importlib.util.spec_from_file_location("rendered_train", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rendered_train"] = module  # a module its dataclasses can find
    spec.loader.exec_module(module)  # the script only runs main() under __main__
    return module


def facts(flavor):
    cuda = flavor.accelerator is not None
    capability = tuple(int(x) for x in str(flavor.compute_capability).split(".")) if cuda else None
    return cuda, capability, flavor.accelerator or "CPU"


@pytest.mark.parametrize("flavor", hf_flavors(), ids=lambda f: f.name)
def test_auto_dtype_follows_the_hardware(script, flavor):
    cuda, capability, device = facts(flavor)
    plan = script.precision_plan("auto", "auto", cuda, capability, device)
    assert plan["error"] is None and plan["use_4bit"] is cuda
    if not cuda:
        assert (plan["weights"], plan["compute"], plan["trainer_bf16"], plan["trainer_fp16"]) == ("float32", None, False, False)
    elif capability < (8, 0):  # T4
        assert (plan["weights"], plan["compute"], plan["trainer_fp16"], plan["trainer_bf16"]) == ("float16", "float16", True, False)
        assert "no bf16" in plan["reason"] and "7.5" in plan["reason"]
    else:
        assert (plan["weights"], plan["compute"], plan["trainer_bf16"], plan["trainer_fp16"]) == ("bfloat16", "bfloat16", True, False)
        assert "supports bf16" in plan["reason"]


def test_every_gpu_flavor_states_its_compute_capability():
    gpus = [f for f in hf_flavors() if f.accelerator]
    assert gpus and all(f.compute_capability for f in gpus)
    assert {f.compute_capability for f in gpus if "T4" in f.accelerator} == {7.5}


def test_bf16_forced_on_a_t4_is_refused_with_the_fix(script):
    plan = script.precision_plan("bfloat16", "auto", True, (7, 5), "Tesla T4")
    problem, fix = plan["error"]
    assert "Tesla T4" in problem and "no bf16" in problem and "model.dtype: auto" in fix


def test_4bit_forced_on_a_cpu_computes_in_the_weights_dtype(script):
    plan = script.precision_plan("auto", "4bit", False, None, "CPU")
    assert plan["use_4bit"] and plan["compute"] == plan["weights"] == "float32"


@pytest.mark.parametrize("flavor", hf_flavors(), ids=lambda f: f.name)
def test_speed_choices_follow_the_machine(script, flavor):
    cuda, capability, _ = facts(flavor)
    bare = script.attention_for("auto", cuda, capability, ())
    assert bare[0] == "sdpa"
    flash = script.attention_for("auto", cuda, capability, ("flash_attn", "kernels", "liger_kernel"))
    if not cuda:
        assert flash[0] == "sdpa"
    elif capability >= (9, 0):
        assert flash[0] == "flash_attention_2"  # the first kernel in FLASH that the GPU runs
    elif capability >= (8, 0):
        assert flash[0] == "flash_attention_2"
    else:  # T4: neither flash-attention 2 nor 3
        assert flash[0] == "sdpa"
    memory = {"t4": 16, "l4": 24, "a10g": 24, "l40s": 48, "a100": 80, "h200": 141}
    gb = next((v for k, v in memory.items() if flavor.name.startswith(k)), 0)
    for attention in (bare[0], flash[0]):
        plan = script.speed_plan(packing="auto", checkpointing="auto", batch=4, accumulation=2, cuda=cuda,
                                 attention=attention, gpu_memory_gb=gb, weights_gb=1.5, max_length=4096,
                                 installed=("liger_kernel",))
        assert plan["packing"] is True and plan["sampling"] == "random"
        varlen = attention in script.FLASH
        assert (plan["micro_batch"], plan["accumulation"]) == ((4, 2) if varlen else (1, 8))  # same rows per step
        assert plan["checkpointing"] is False  # 1.5 GB of weights, 4096-token rows: no memory pressure
        assert plan["optimizer"] == ("adamw_torch_fused" if cuda else "adamw_torch")
        assert plan["liger"] is cuda and plan["workers"] == (2 if cuda else 0)
        assert len(plan["reasons"]) == 8 and all(": " in r for r in plan["reasons"])


def test_memory_pressure_turns_checkpointing_on_and_settings_win(script):
    heavy = script.speed_plan(packing="auto", checkpointing="auto", batch=1, accumulation=1, cuda=True,
                              gpu_memory_gb=16, weights_gb=7.0, max_length=4096)
    assert heavy["checkpointing"] is True and "memory needs it" in " ".join(heavy["reasons"])
    fixed = script.speed_plan(packing=False, checkpointing=True, batch=4, accumulation=1, cuda=False)
    assert (fixed["packing"], fixed["checkpointing"], fixed["micro_batch"], fixed["sampling"]) == \
        (False, True, 4, "group_by_length")
