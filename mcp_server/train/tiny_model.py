"""The embedded default model: a tiny random-initialised Qwen3 or Llama with a tokenizer trained on
the dataset, saved as an ordinary Hugging Face model folder.

No model hub is reachable on CPU test machines, so demos and tests build their own model. It is a
real architecture with a real byte-level BPE tokenizer and a chat template with ``{% generation %}``
markers that keeps tool calls (TRL's Qwen3 training template, read from the installed TRL), so the
whole pipeline runs unchanged; a GPU user swaps ``model.name`` for a Hub id and nothing else.

Usage:
    python -m mcp_server.train.tiny_model --data examples/data/agent_traces.jsonl -o /tmp/tiny
    tunepack tiny-model --data examples/data/agent_traces.jsonl -o /tmp/tiny
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

BUILDER_VERSION = "2"
SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
    "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
]
ARCH_SIZES = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2}


def fingerprint(data_files: list[str], arch: str, vocab_size: int) -> str:
    digest = hashlib.sha256(f"{BUILDER_VERSION}:{arch}:{vocab_size}".encode())
    for path in sorted(data_files):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def _read_rows(data_files: list[str]) -> list[dict]:
    from datasets import concatenate_datasets, load_dataset

    parts = [load_dataset("parquet" if f.endswith(".parquet") else "json", data_files=f, split="train")
             for f in data_files]
    return list(parts[0] if len(parts) == 1 else concatenate_datasets(parts))


def _training_texts(rows: list[dict], template: str) -> list[str]:
    """The rows rendered with the chat template (what the tokenizer will see), plus their raw JSON."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from .maskcheck import conversation, detect_format

    renderer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()))
    renderer.chat_template = template
    texts = []
    fmt = detect_format(rows[0].keys()) if rows else "messages"
    for row in rows:
        messages, tools, _ = conversation(row, fmt)
        texts.append(renderer.apply_chat_template(messages, tools=tools, tokenize=False))
    return texts


def build_tiny_model(data_files: list[str], out_dir: str | Path, *, arch: str = "qwen3",
                     vocab_size: int = 2048, seed: int = 0) -> Path:
    """Build the model into ``out_dir`` (written to a temp folder first, then moved in place)."""
    import torch
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, PreTrainedTokenizerFast

    out_dir = Path(out_dir)
    template = (Path(trl.__file__).parent / "chat_templates" / "qwen3_training.jinja").read_text(encoding="utf-8")
    texts = _training_texts(_read_rows(data_files), template)

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[3:])
    tokenizer.chat_template = template

    if arch == "qwen3":
        from transformers import Qwen3Config as Config, Qwen3ForCausalLM as Model
        extra = {"head_dim": 16}
    elif arch == "llama":
        from transformers import LlamaConfig as Config, LlamaForCausalLM as Model
        extra = {}
    else:
        raise ValueError(f"unknown tiny architecture '{arch}' (allowed: qwen3, llama)")
    config = Config(vocab_size=len(tokenizer), max_position_embeddings=4096, tie_word_embeddings=True, initializer_range=0.1,
                    bos_token_id=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                    **ARCH_SIZES, **extra)
    torch.manual_seed(seed)
    model = Model(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "tunepack_tiny.json").write_text(json.dumps({
            "builder_version": BUILDER_VERSION, "arch": arch, "vocab_size": len(tokenizer), "seed": seed,
            "data_files": list(data_files), "parameters": sum(p.numel() for p in model.parameters()),
        }, indent=2))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build the embedded tiny model.")
    parser.add_argument("--data", nargs="+", required=True, help="jsonl/json/parquet files to train the tokenizer on")
    parser.add_argument("-o", "--out", required=True, help="output model folder")
    parser.add_argument("--arch", default="qwen3", choices=["qwen3", "llama"])
    parser.add_argument("--vocab-size", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = build_tiny_model(args.data, args.out, arch=args.arch, vocab_size=args.vocab_size, seed=args.seed)
    print(json.dumps({"model_dir": str(path)}))


if __name__ == "__main__":
    main()
