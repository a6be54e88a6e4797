"""The prepared GPU check: Gemma 4 E2B's shape, QLoRA through the rendered script, vLLM eval of base + adapter.

No network: the model is built from E2B's published configuration with random weights (the multimodal
Gemma4ForConditionalGeneration, towers included; ~5 B parameters with the per-layer embeddings), the
tokenizer is trained on the data with Gemma 4's special tokens and stock chat template (as tiny:gemma4's
is), and the data are agent sessions from tests/fixtures converted and shaped for Gemma 4 plus the demo
rows. Then `tunepack run` on one config: the mask check, 30 QLoRA steps (4-bit nf4, the precision the GPU
supports, packing, LoRA on the language model only), the registry, and the eval of the base and base + adapter:
HumanEval on 5 problems, next-action on the held-out 20 % of the sessions, and BFCL simple_python on 5 when
bfcl-eval is installed (`vllm/<base>:<adapter>` and vLLM LoRA requests when vLLM is installed, else the hf path,
said in the output). Prints tokens/s, peak GPU memory, the LoRA targets and the eval table.

Usage:
    bash bench/gpu_check.sh [OUT_DIR]      # on one GPU, with `pip install -e '.[train,eval]'` (+ vllm); < 8 min
    python bench/gpu_check.py --quick      # the same path on CPU at tiny size, 2 steps, no eval (CI smoke)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# google/gemma-4-E2B-it's text model as its model card describes it (transcribed, not downloaded: check it
# against the checkpoint's config.json when you have the Hub): 35 layers, 4 sliding-window layers to each
# full one, the last 20 sharing KV caches, per-layer input embeddings of 256, a 262,144-token vocabulary.
E2B_TEXT = dict(hidden_size=1536, intermediate_size=6144, num_hidden_layers=35, num_attention_heads=8,
                num_key_value_heads=1, head_dim=256, sliding_window=512, num_kv_shared_layers=20,
                hidden_size_per_layer_input=256, final_logit_softcapping=30.0, use_double_wide_mlp=True,
                layer_types=(["sliding_attention"] * 4 + ["full_attention"]) * 7)
VOCAB = 262_144
TINY_TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=5, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=32, sliding_window=64, num_kv_shared_layers=0,
                 hidden_size_per_layer_input=16, layer_types=["sliding_attention"] * 4 + ["full_attention"])


def build_data(folder: Path) -> Path:
    from mcp_server.traces import ConvertOptions, convert

    sessions = folder / "sessions.jsonl"
    convert([str(REPO / "tests" / "fixtures" / "traces")], sessions, ConvertOptions(template="gemma4_v5"))
    demo = (REPO / "examples" / "data" / "agent_traces.jsonl").read_text(encoding="utf-8")
    rows = folder / "rows.jsonl"
    rows.write_text(sessions.read_text(encoding="utf-8") + demo, encoding="utf-8")
    return rows


def build_model(rows: Path, out: Path, quick: bool) -> dict:
    """Gemma 4 at E2B's shape (or tiny with --quick), random weights, saved in bf16 (float32 on CPU)."""
    import torch
    from transformers import Gemma4ForConditionalGeneration, GenerationConfig
    from transformers.models.gemma4.configuration_gemma4 import (
        Gemma4AudioConfig, Gemma4Config, Gemma4TextConfig, Gemma4VisionConfig)

    from mcp_server.train.tiny_model import FAMILIES, _read_rows, _training_texts, build_tokenizer, stock_template

    family = FAMILIES["gemma4"]
    template = stock_template(family)
    tokenizer = build_tokenizer(_training_texts(_read_rows([str(rows)]), template, family), family, template,
                                vocab_size=1024 if quick else 8192)
    ids = tokenizer.convert_tokens_to_ids
    vocab = len(tokenizer) if quick else VOCAB
    text = Gemma4TextConfig(vocab_size=vocab, vocab_size_per_layer_input=vocab, bos_token_id=ids("<bos>"),
                            eos_token_id=ids("<eos>"), pad_token_id=ids("<pad>"), **(TINY_TEXT if quick else E2B_TEXT))
    small = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)
    config = Gemma4Config(
        text_config=text,
        vision_config=Gemma4VisionConfig(**small) if quick else Gemma4VisionConfig(),
        audio_config=Gemma4AudioConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2) if quick
        else Gemma4AudioConfig(),
        boi_token_id=ids("<|image>"), eoi_token_id=ids("<image|>"), image_token_id=ids("<|image|>"),
        video_token_id=ids("<|video|>"), boa_token_id=ids("<|audio>"), eoa_token_index=ids("<audio|>"),
        audio_token_id=ids("<|audio|>"), tie_word_embeddings=True)
    cuda = torch.cuda.is_available()
    dtype = torch.bfloat16 if cuda else torch.float32
    started = time.time()
    with torch.device("cuda" if cuda else "cpu"):
        model = Gemma4ForConditionalGeneration(config).to(dtype)
    model.generation_config = GenerationConfig(eos_token_id=[ids(t) for t in family.stops], pad_token_id=ids("<pad>"),
                                               bos_token_id=ids("<bos>"))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    parameters = sum(p.numel() for p in model.parameters())
    del model
    if cuda:
        torch.cuda.empty_cache()
    return {"parameters": parameters, "build_s": round(time.time() - started, 1), "dtype": str(dtype)}


def write_config(folder: Path, model: Path, rows: Path, quick: bool) -> Path:
    import yaml

    try:
        import vllm  # noqa: F401
        backend = "vllm"
    except ImportError:
        backend = "hf"
    import importlib.util

    tasks = ["humaneval", "next-action"]  # next-action and BFCL take the vLLM path too (LoRA request, batched)
    if importlib.util.find_spec("bfcl_eval"):  # pip install --no-deps bfcl-eval==2026.3.23
        tasks.append("bfcl:simple_python")
    config = {
        "model": {"name": str(model)},
        "data": {"path": str(rows), "allow_truncation": True, "eval_fraction": 0.2},
        "chat_template": "model", "quantization": "auto",
        "lora": {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": "all-linear"},
        "training": {"max_steps": 2 if quick else 30, "max_length": 1024 if quick else 2048, "packing": True,
                     "per_device_train_batch_size": 2 if quick else 4, "learning_rate": 2e-4,
                     "logging_steps": 1 if quick else 5, "gradient_checkpointing": not quick, "warmup_ratio": 0.0},
        "tracking": {"project": "gpu-check"}, "output": {"name": "gpu-check-gemma4-e2b"},
        "eval": {"tasks": []} if quick else {"tasks": tasks, "limit": 5, "max_tokens": 256, "backend": backend,
                                  "sandbox": "unsafe-host"},
    }
    path = folder / "gpu-check.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def report(result: dict, built: dict, wall: float) -> None:
    manifest = json.loads((Path(result["adapter_path"]) / "tunepack_manifest.json").read_text())
    training, device = manifest["training"], manifest["device"]
    tokens, runtime = training.get("tokens_seen"), training.get("train_runtime_s")
    size = built["parameters"]
    print(f"model:       {manifest['model_class']}, {size / 1e9:.2f} B parameters" if size > 1e8 else
          f"model:       {manifest['model_class']}, {size / 1e6:.1f} M parameters", f"({built['dtype']}, "
          f"built in {built['build_s']} s)")
    print(f"device:      {device['name']}; peak memory {device.get('peak_memory_gb')} GB")
    plan = manifest.get("memory_plan")
    if plan:  # tunepack's plan before the run (train/memory.py) beside the peak it measured
        print(f"memory plan: {plan['total_gb']} GB (weights {plan['weights_gb']}, LoRA + optimizer {plan['lora_gb']}, "
              f"activations {plan['activations_gb']}, logits {plan['logits_gb']}) vs peak "
              f"{device.get('peak_memory_gb')} GB")
    print(f"precision:   {manifest['precision']['weights']} / 4-bit: {manifest['quantization']['used_4bit']} — "
          f"{manifest['precision']['reason']}")
    print(f"lora:        {manifest['lora_targets']['adapted']} modules, "
          f"{manifest['lora_targets']['outside_language_model']} outside the language model")
    print(f"template:    {manifest['chat_template']}; mask check share "
          f"{manifest['mask_check']['trained_token_share']:.1%} over {manifest['mask_check']['rows']} rows")
    print(f"training:    {training['steps']} steps in {runtime:.1f} s, loss {training['first_loss']:.3f} → "
          f"{training['last_loss']:.3f}" + (f", {tokens / runtime:,.0f} tokens/s (every token of the packed batches)"
                                            if tokens and runtime else ""))
    if result.get("eval"):
        print(result["eval"].get("table") or json.dumps(result["eval"].get("error")))
    print(f"wall time:   {wall:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=None, help="working folder (default: a temp folder)")
    parser.add_argument("--quick", action="store_true", help="tiny shape on CPU, 2 steps, no eval (CI smoke)")
    args = parser.parse_args()
    folder = Path(args.out or tempfile.mkdtemp(prefix="tunepack-gpu-check-")).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TUNEPACK_HOME": str(folder / "home"), "TRACKIO_DIR": str(folder / "trackio"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    os.environ.update(env)
    started = time.time()
    rows = build_data(folder)
    built = build_model(rows, folder / "gemma4-e2b-random", args.quick)
    config = write_config(folder, folder / "gemma4-e2b-random", rows, args.quick)
    done = subprocess.run([sys.executable, "-m", "mcp_server.cli", "run", str(config), "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
        return 1
    report(json.loads(done.stdout), built, time.time() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
