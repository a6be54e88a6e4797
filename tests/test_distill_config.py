"""Distillation without training: the config rules, the family and vocabulary refusals with their messages, the
memory plan on real flavors, and the rendered script (its own readable file over the shared helpers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server.config import TrainConfig, parse_config
from mcp_server.errors import ConfigError
from mcp_server.jobs import flavor_info, gpu_memory_gb
from mcp_server.methods import render_script
from mcp_server.methods.distill import DISTILL
from mcp_server.methods.distill import teacher as distill
from mcp_server.methods.distill.memory import model_facts, quote
from mcp_server.methods.distill.vocab_check import VocabMismatch, compare_encodings, compare_vocabularies, output_widths


def _cfg(tmp_path: Path, **extra) -> dict:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}) + "\n")
    return {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(data)},
            "training": {"method": "distill"}, "teacher": {"name": "Qwen/Qwen3-4B"}, **extra}


def _error(raw: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    return str(caught.value)


def test_a_distill_config_names_its_method_in_the_registry_and_run_names(tmp_path):
    cfg = parse_config(_cfg(tmp_path, distill={"lmbda": 0.5, "beta": 0.5}))
    assert cfg.registry_name == "Qwen3-0.6B-distill"
    assert cfg.run_name.endswith("-kd-l0.5-b0.5") and cfg.distill.mode == "mixed-lmbda0.5"
    sft = parse_config({k: v for k, v in _cfg(tmp_path).items() if k != "teacher"} | {"training": {}})
    assert sft.registry_name == "Qwen3-0.6B-sft" and "-kd-" not in sft.run_name


@pytest.mark.parametrize(("change", "message"), [
    ({"teacher": None}, "training.method is distill but there is no teacher"),
    ({"training": {}}, "a teacher is set but training.method is sft"),
    ({"training": {"method": "distill", "packing": True}}, "training.packing: true does not apply to distillation"),
    ({"distributed": {"processes": 2}}, "distillation runs in one process for now"),
    ({"teacher": {"name": "Qwen/Qwen3-0.6B"}}, "the teacher is the student itself"),
    ({"distill": {"lmbda": 1.5}}, "distill.lmbda"),
    ({"model": {"name": "Qwen/Qwen3-0.6B", "adapter": "qwen-sft"}}, "distillation trains a new student adapter"),
])
def test_impossible_distillation_configs_are_refused_with_the_key(tmp_path, change, message):
    raw = _cfg(tmp_path)
    raw.update(change)
    if raw.get("teacher") is None:
        raw.pop("teacher")
    assert message in _error(raw)


def test_the_distill_section_without_the_method_is_refused(tmp_path):
    raw = {k: v for k, v in _cfg(tmp_path).items() if k != "teacher"} | {"training": {}, "distill": {"lmbda": 1.0}}
    assert "the distill section applies only to training.method: distill" in _error(raw)


def test_sweeps_reach_the_distillation_knobs():
    from mcp_server.sweeps.spec import check_key

    for key in ("distill.lmbda", "distill.beta", "distill.temperature", "teacher.quantization"):
        assert check_key(key) == key


def test_on_policy_is_refused_for_gemma4_with_the_reason_and_off_policy_is_not(tmp_path):
    raw = _cfg(tmp_path, model={"name": "google/gemma-4-E2B-it"}, teacher={"name": "google/gemma-4-31B-it"},
               distill={"lmbda": 0.5})
    with pytest.raises(ConfigError) as caught:
        distill.check_mode(parse_config(raw))
    assert "gemma4" in caught.value.problem and "set distill.lmbda: 0" in caught.value.fix
    raw["distill"] = {"lmbda": 0.0}
    distill.check_mode(parse_config(raw))  # off-policy: what the tutorial ran for this family


def test_an_adapter_teacher_loads_its_base_and_its_own_tokenizer(tmp_path):
    adapter = tmp_path / "teacher-adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen3-4B"}))
    (adapter / "tokenizer_config.json").write_text("{}")
    source = distill.teacher_source(parse_config(_cfg(tmp_path, teacher={"name": str(adapter)})))
    assert source == {"name": str(adapter), "base": "Qwen/Qwen3-4B", "adapter": str(adapter), "revision": None,
                      "tokenizer": str(adapter)}


def test_a_local_teacher_folder_that_is_no_model_is_refused(tmp_path):
    from mcp_server.config import resolve_config

    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="neither a saved model or adapter folder"):
        resolve_config(parse_config(_cfg(tmp_path, teacher={"name": str(tmp_path / "empty")})))


def test_vocabularies_and_encodings_are_compared_id_by_id():
    same = {"a": 0, "b": 1}
    assert compare_vocabularies(same, dict(same)) == {"tokens": 2}
    with pytest.raises(VocabMismatch, match="'b' is id 1 for the student and 2 for the teacher"):
        compare_vocabularies(same, {"a": 0, "b": 2, "c": 1})
    assert compare_encodings(["ab"], lambda t: [0, 1], lambda t: [0, 1]) == {"rows": 1, "tokens": 2}
    with pytest.raises(VocabMismatch, match="at token 1 the student has 1 \\(id 1\\), the teacher 2 \\(id 2\\)"):
        compare_encodings(["ab"], lambda t: [0, 1], lambda t: [0, 2])


def test_wider_output_layers_are_sliced_and_narrower_ones_refused():
    assert output_widths(151_643, 151_936, 152_064) == {"compared": 151_643, "student_width": 151_936,
                                                        "teacher_width": 152_064, "sliced": True}
    with pytest.raises(VocabMismatch, match="teacher's output layer has 100 rows but its tokenizer has 120"):
        output_widths(120, 128, 100)


def test_gpu_memory_is_read_per_gpu_from_the_flavor_table():
    assert gpu_memory_gb(flavor_info("hf", "a100-large")) == 80.0
    assert gpu_memory_gb(flavor_info("hf", "l4x4")) == 24.0
    assert gpu_memory_gb(flavor_info("hf", "cpu-basic")) is None


def test_the_gemma4_plan_loads_the_31b_teacher_in_4bit_on_an_a100_and_refuses_an_a10g():
    student, teacher = model_facts("google/gemma-4-E2B-it"), model_facts("google/gemma-4-31B-it")
    assert student["parameters"] == 5_000_000_000 and teacher["parameters"] == 31_000_000_000  # from the names
    assert student["vocab"] == teacher["vocab"] == 262_144
    kwargs = dict(student_4bit=True, teacher_setting="auto", micro_batch=2, max_length=2048)
    a100 = quote(student, teacher, gpu_gb=80.0, **kwargs)
    assert a100["fits"] and a100["teacher"]["weights"] == "4bit"  # bf16 (58 GB) would not fit beside the logits
    assert a100["logits_gb"] == 20.0
    h200 = quote(student, teacher, gpu_gb=141.0, **kwargs)
    assert h200["fits"] and h200["teacher"]["weights"] == "bfloat16"  # auto: 4-bit only when it must
    a10g = quote(student, teacher, gpu_gb=24.0, **kwargs)
    assert not a10g["fits"] and "halve training.per_device_train_batch_size" in a10g["advice"]


def test_the_rendered_distill_script_is_its_own_file_and_compiles(tmp_path):
    cfg = TrainConfig.model_validate(_cfg(tmp_path, distill={"lmbda": 0.25, "beta": 0.5}))
    text = render_script(cfg)
    assert "class TunepackDistillTrainer(SFTTrainer)" in text and "GKDTrainer.generalized_jsd_loss" in text
    assert "def compare_encodings" in text and "def quote(" in text  # the checks travel embedded
    assert "'trackio_group': 'distill-mixed-lmbda0.25'" in text
    sft = render_script(TrainConfig.model_validate({k: v for k, v in _cfg(tmp_path).items() if k != "teacher"}
                                                   | {"training": {}}))
    assert "Distill" not in sft and "def packing_isolated" in sft and "def packing_isolated" not in text
    for name, body in (("distill.py", text), ("sft.py", sft)):
        (tmp_path / name).write_text(body)
        compiled = subprocess.run([sys.executable, "-m", "py_compile", str(tmp_path / name)], capture_output=True)
        assert compiled.returncode == 0, compiled.stderr


def test_an_eval_refuses_a_teacher_the_run_did_not_distil_from():
    from mcp_server.evals.kit.errors import KitError
    from mcp_server.evals.kit.integrity import check_model

    expected = {"base": "Qwen/Qwen3-0.6B", "teacher": {"base": "Qwen/Qwen3-4B", "adapter": None}}
    check_model({"label": "teacher", "base": "Qwen/Qwen3-4B"}, expected)
    with pytest.raises(KitError, match="is not the teacher the run distilled from"):
        check_model({"label": "teacher", "base": "Qwen/Qwen3-8B"}, expected)
    with pytest.raises(KitError, match="is not the teacher"):
        check_model({"label": "teacher", "base": "Qwen/Qwen3-4B"}, {"base": "Qwen/Qwen3-0.6B", "teacher": None})


def test_an_hf_job_cannot_read_a_local_teacher_and_a_plan_that_cannot_fit_is_refused(tmp_path):

    folder = tmp_path / "teacher"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="an HF job cannot read"):
        DISTILL.plan(parse_config(_cfg(tmp_path, teacher={"name": str(folder)})), "hf", "a100-large")
    gemma = _cfg(tmp_path, model={"name": "google/gemma-4-E2B-it"}, teacher={"name": "google/gemma-4-31B-it"},
                 training={"method": "distill", "per_device_train_batch_size": 2, "max_length": 2048})
    with pytest.raises(ConfigError, match="do not fit one GPU of a10g-large"):
        DISTILL.plan(parse_config(gemma), "hf", "a10g-large")
    plan = DISTILL.plan(parse_config(gemma), "hf", "a100-large")
    assert plan["teacher_4bit"] and plan["memory"]["total_gb"] == 41.0 and plan["mode"] == "off-policy"
    script = render_script(parse_config(gemma), plan=plan)
    assert "'teacher_4bit': True" in script and "'flavor': 'a100-large'" in script


def test_sweeps_rank_distillation_metrics_lower_is_better():
    from mcp_server.ledger.model import direction_for

    assert direction_for("eval/distill/kl") == direction_for("eval/distill/nll") == "min"
    assert direction_for("eval/next_action/tool_name") == "max"
