"""The GPU throughput table: ours vs the plain TRL baseline on realistic model shapes, no network.

Random-initialised models built from published configurations — Qwen3-1.7B (Qwen3ForCausalLM) and Gemma 4 E2B
(the multimodal Gemma4ForConditionalGeneration, towers included; shape as in bench/gpu_check.py) — with a
tokenizer trained on the fixture sessions (the replicas' tokenizers, their family's special tokens and stock
template). For each model and each of LoRA in bf16 and QLoRA (4-bit nf4), the rendered script with its
defaults against TRL's SFTTrainer with its own (padded batches, activation checkpointing), same rows (windows of
2048 tokens), LoRA and hyperparameters, 1 epoch capped at 40 steps. Figures: trained tokens/s, peak GPU memory,
and MFU = 6 × parameters × tokens processed ÷ time ÷ the GPU's bf16 peak (989 TFLOP/s for H100/H200; an
approximation: LoRA skips the frozen weights' gradients). Prints a table.

Usage:
    bash bench/gpu.sh              # one CUDA GPU, < 8 minutes (pip install -e '.[train]' first)
    python bench/gpu.py --quick    # the same path on CPU at tiny size, one configuration (CI smoke)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
PEAK_TFLOPS = 989.0
QWEN3_1_7B = dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
                  num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1_000_000.0)


def build(family: str, folder: Path, rows: Path) -> tuple[Path, int]:
    """(model folder, parameters): the family's tokenizer (special tokens, stock template) with the real shape's
    random weights. (--quick uses the tiny replica the windows were counted with.)"""
    import torch

    from mcp_server.train.tiny_model import build_tiny_model

    out = folder / f"{family}-full"
    if family == "gemma4":
        from gpu_check import build_model

        return out, build_model(rows, out, quick=False)["parameters"]
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    tiny = build_tiny_model([str(rows)], folder / "qwen3-tokenizer", arch="qwen3", vocab_size=8192)
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    ids = tokenizer.convert_tokens_to_ids
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(Qwen3Config(vocab_size=151_936, tie_word_embeddings=True, eos_token_id=ids("<|im_end|>"),
                                             pad_token_id=ids("<|endoftext|>"), **QWEN3_1_7B)).to(torch.bfloat16)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    parameters = sum(p.numel() for p in model.parameters())
    del model
    torch.cuda.empty_cache()
    return out, parameters


def measure(name: str, model: Path, setup: dict, folder: Path, quantization: str, env: dict) -> list[dict]:
    from sft import BASELINE, ours, run_python

    steps = 4 if setup["max_length"] <= 512 else 40
    common = {"model": str(model), "template": setup["template"], "train": str(folder / "train.jsonl"), "batch": 4,
              "lr": 2e-4, "max_length": setup["max_length"], "seed": 42, "packing": False, "checkpointing": True,
              "quantization": quantization, "max_steps": steps, "out": str(folder / f"{name}-{quantization}-trl")}
    base = run_python(BASELINE, json.dumps(common), env=env)
    mine = ours(folder, {**setup, "model": str(model)}, setup["max_length"], env,
                extra={"quantization": quantization, "training": {"max_steps": steps, "learning_rate": 2e-4}})
    return [{"model": name, "method": quantization, "run": run, **result}
            for run, result in (("trl", base), ("tunepack", mine))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shape on CPU, one configuration (CI smoke)")
    args = parser.parse_args()
    import torch

    if not args.quick and not torch.cuda.is_available():
        raise SystemExit("bench/gpu.py: no CUDA GPU here; run it on one (bash bench/gpu.sh) or use --quick on CPU")
    from sft import prepare

    folder = Path(tempfile.mkdtemp(prefix="tunepack-bench-gpu-"))
    env = {**os.environ, "TUNEPACK_HOME": str(folder / "home"), "TRACKIO_DIR": str(folder / "trackio"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    os.environ.update({k: env[k] for k in ("TUNEPACK_HOME", "TRACKIO_DIR")})
    max_length = 512 if args.quick else 2048  # the fixture sessions need 512 (tool schemas)
    setup = prepare(folder, max_length, 8 if args.quick else 160, fixtures_only=True)
    rows = folder / "rows.jsonl"
    plan = [("qwen3", "none")] if args.quick else [(f, q) for f in ("qwen3", "gemma4") for q in ("none", "4bit")]
    table = []
    for family, quantization in plan:
        # --quick: the very replica the windows were counted with (another vocabulary cuts rows differently)
        model, parameters = (Path(setup["model"]), 0) if args.quick else build(family, folder, rows)
        for row in measure(family, model, setup, folder, quantization, env):
            row["trained_tokens_per_s"] = row["trained_tokens"] / row["runtime_s"]
            row["mfu"] = (6 * parameters * row.get("tokens_processed", row["trained_tokens"]) / row["runtime_s"]
                          / (PEAK_TFLOPS * 1e12)) if parameters else None
            table.append(row)
    print(f"{'model':8} {'method':6} {'run':9} {'trained tok/s':>14} {'peak GB':>8} {'MFU':>6} {'padding':>8}")
    for row in table:
        mfu = f"{row['mfu']:.1%}" if row["mfu"] is not None else "—"
        peak = f"{row['peak_memory_gb']:.1f}" if row.get("peak_memory_gb") else "—"
        print(f"{row['model']:8} {row['method']:6} {row['run']:9} {row['trained_tokens_per_s']:14.0f} {peak:>8} "
              f"{mfu:>6} {row['padding_waste']:8.1%}")


if __name__ == "__main__":
    main()
