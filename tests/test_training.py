"""Real training on the tiny model: TRL + PEFT (+ bitsandbytes 4-bit on CPU) + Trackio, no mocks.
Each run is ≤ 20 steps on rows ≤ 128 tokens."""

import hashlib
import json
import os
import subprocess
import sys

import pytest

from support.common import short_conversation
from mcp_server.config import parse_config
from mcp_server.tracking import TrackioStore
from mcp_server.train import maskcheck as mc
from mcp_server.methods import write_script

pytestmark = pytest.mark.slow


def train(tmp_path, tiny_model_dir, short_data, run_name, **top):
    training = {"max_length": 128, "max_steps": 16, "logging_steps": 2, "learning_rate": 5e-3,
                "per_device_train_batch_size": 4, "gradient_checkpointing": False, "warmup_ratio": 0.0}
    training.update(top.pop("training", {}))
    cfg = parse_config({"model": {"name": str(tiny_model_dir)}, "data": {"path": str(short_data)},
                        "training": training, "tracking": {"project": "training-tests", "run_name": run_name}, **top})
    script = write_script(cfg, tmp_path / "train.py")
    out = tmp_path / "adapter"
    done = subprocess.run([sys.executable, str(script), "--output-dir", str(out)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env=os.environ.copy())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    manifest = json.loads((out / "tunepack_manifest.json").read_text())
    return script, out, manifest, done.stdout


def losses(out):
    return [json.loads(l)["loss"] for l in (out / "metrics.jsonl").read_text().splitlines() if '"loss"' in l]


def test_script_trains_saves_adapter_manifest_and_tracks(tmp_path, tiny_model_dir, short_data):
    script, out, manifest, stdout = train(tmp_path, tiny_model_dir, short_data, "plain-lora")
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    assert manifest["script_sha256"] == hashlib.sha256(script.read_bytes()).hexdigest()
    assert manifest["quantization"] == {"setting": "auto", "used_4bit": False, "quantized_layers_found": False,
                                        "reason": "auto: no CUDA, plain LoRA"}
    assert manifest["device"]["type"] == "cpu" and manifest["training"]["steps"] == 16
    assert manifest["dataset"]["train_rows"] == 32 and manifest["dataset"]["fingerprint"]
    assert manifest["dataset"]["files"][0]["sha256"] == hashlib.sha256(short_data.read_bytes()).hexdigest()
    assert manifest["libraries"]["trl"] and manifest["libraries"]["peft"]
    assert manifest["mask_check"]["problems"] == []
    batches = manifest["mask_check"]["batches"]  # the collated batches carry TRL's labels, which are the checked masks
    assert min(batches["verified_per_batch"]) >= 1 and batches["sequences_mismatched"] == 0
    assert batches["checked_rows_in_dataset"] == 32 and batches["checked_rows_mismatched"] == 0
    assert "TUNEPACK_DONE" in stdout and stdout.count("TUNEPACK_METRIC") >= 8

    store = TrackioStore(os.environ["TRACKIO_DIR"])
    assert "plain-lora" in store.runs("training-tests")
    summary = store.summary("training-tests", "plain-lora")
    for key in ("loss", "entropy", "mean_token_accuracy", "learning_rate", "num_tokens", "grad_norm"):
        assert key in summary.last, key
    assert summary.first["loss"] == pytest.approx(losses(out)[0])


def test_4bit_on_cpu_quantizes_and_learns(tmp_path, tiny_model_dir, short_data):
    _, out, manifest, stdout = train(tmp_path, tiny_model_dir, short_data, "forced-4bit", quantization="4bit")
    assert manifest["quantization"]["used_4bit"] is True
    assert manifest["quantization"]["quantized_layers_found"] is True  # bitsandbytes Linear4bit in the model
    assert manifest["quantization"]["reason"] == "forced by config"
    assert "4-bit nf4 (QLoRA)" in stdout
    values = losses(out)
    assert sum(values[-3:]) / 3 < sum(values[:3]) / 3, values


def test_trl_labels_match_the_mask_token_by_token(tiny_tokenizer, tiny_model_dir):
    """Build TRL's own training features for one conversation and compare every label."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    messages = short_conversation(7)
    trainer = SFTTrainer(
        model=str(tiny_model_dir), processing_class=tiny_tokenizer,
        train_dataset=Dataset.from_list([{"messages": messages}]),
        peft_config=LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"),
        args=SFTConfig(output_dir=str(tiny_model_dir.parent / "labels-check"), assistant_only_loss=True,
                       max_length=128, report_to="none", use_cpu=True, max_steps=1, activation_checkpointing=False),
    )
    features = trainer.train_dataset[0]
    ids, labels = features["input_ids"], features["labels"]
    # the tiny model carries Qwen3's stock template: TRL swaps in its training variant, and so does tunepack
    template, label = mc.resolve_chat_template(tiny_tokenizer, "model", "messages", "tiny:qwen3")
    assert label.startswith("model → trl:qwen3")
    expected_ids, mask, _, _ = mc.tokenize_row(tiny_tokenizer, messages, None, template)
    assert ids == expected_ids
    for position, (token, label, trained) in enumerate(zip(ids, labels, mask)):
        assert label == (token if trained else -100), f"token {position} {tiny_tokenizer.decode([token])!r}"
    trained_text = tiny_tokenizer.decode([t for t, l in zip(ids, labels) if l != -100])
    assert trained_text.count("<|im_end|>") == 2
    assert '"name": "bash"' in trained_text and "pytest pkg7" in trained_text and "All 3 tests in pkg7 pass." in trained_text
    for text in ("You are a coding agent.", "Run the tests in pkg7.", "3 passed", "<|im_start|>"):
        assert text not in trained_text
