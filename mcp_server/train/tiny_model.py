"""CPU replicas of the model families people train: ``tiny:qwen3``, ``tiny:llama3``, ``tiny:gemma4``.

No model hub is reachable on CPU test machines, so demos and tests build their own model — but a
model proves something only if it is a replica of what users run. Each replica has
- the family's real architecture class at tiny size (for Gemma 4 the multimodal
  ``Gemma4ForConditionalGeneration`` that ``AutoModelForCausalLM`` gives for a Gemma 4 checkpoint,
  with tiny vision and audio towers — where LoRA's ``all-linear`` goes wrong);
- the family's real special tokens, each a single token, with the real bos/eos/pad roles and
  generation stop tokens (Gemma 4 stops at ``<turn|>`` and at the ``<|tool_response>`` after a call);
- the family's stock chat template, read from the installed TRL (Qwen3's own, not TRL's training
  variant; Llama 3.2's; Gemma 4's latest revision), so ``chat_template: model`` goes through the same
  recognition a real checkpoint does;
- a byte-level BPE tokenizer trained on the dataset rendered with that template.
A GPU user swaps ``model.name`` for the Hub id of the same family and nothing else changes.

Usage:
    python -m mcp_server.train.tiny_model --data examples/data/agent_traces.jsonl -o /tmp/tiny --family gemma4
    tunepack tiny-model --data examples/data/agent_traces.jsonl -o /tmp/tiny --family llama3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from transformers import PreTrainedModel

BUILDER_VERSION = "3"


@dataclass(frozen=True)
class Family:
    template: str  # the stock template's name in TRL's chat_templates folder
    special: tuple[str, ...]  # special tokens, in id order from 0
    bos: str | None
    eos: str
    pad: str
    stops: tuple[str, ...]  # generation_config.eos_token_id
    plain_added: tuple[str, ...] = ()  # added tokens that decode as text (Qwen's tool and think tags)
    adds_bos: bool = False  # the tokenizer prepends bos to plain text, as the real one does
    extra: dict = field(default_factory=dict)


GEMMA4_MEDIA = {"boi_token": "<|image>", "eoi_token": "<image|>", "image_token": "<|image|>",
                "boa_token": "<|audio>", "eoa_token": "<audio|>", "audio_token": "<|audio|>", "video_token": "<|video|>"}
FAMILIES = {
    "qwen3": Family(
        template="qwen3",
        special=("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                 "<|box_start|>", "<|box_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"),
        bos=None, eos="<|im_end|>", pad="<|endoftext|>", stops=("<|im_end|>", "<|endoftext|>"),
        plain_added=("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")),
    "llama3": Family(
        template="llama3_2",
        special=("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                 "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>", "<|finetune_right_pad_id|>"),
        bos="<|begin_of_text|>", eos="<|eot_id|>", pad="<|finetune_right_pad_id|>",
        stops=("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"), adds_bos=True),
    "gemma4": Family(
        template="gemma4_v5",
        special=("<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>", "<|think|>", "<|tool>", "<tool|>",
                 "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", '<|"|>', "<|channel>",
                 "<channel|>", *GEMMA4_MEDIA.values()),
        bos="<bos>", eos="<eos>", pad="<pad>", stops=("<eos>", "<turn|>", "<|tool_response>"), adds_bos=True,
        extra=GEMMA4_MEDIA),
}
SIZES: dict[str, Any] = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                         "num_key_value_heads": 2}
# a teacher for distillation tests: the same family and tokenizer, twice as wide and deep, and an output layer 64
# rows wider than the tokenizer (as Qwen2.5-7B's 152,064 rows are for the 151,936 ids 0.5B also has)
LARGE: dict[str, Any] = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                         "num_key_value_heads": 2}
LARGE_PADDING = 64


def fingerprint(data_files: list[str], arch: str, vocab_size: int) -> str:
    digest = hashlib.sha256(f"{BUILDER_VERSION}:{arch}:{vocab_size}".encode())
    for path in sorted(data_files):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


TINY_VOCAB = 2048  # the vocabulary of the replica a `tiny:<family>` config gets


def tiny_model_path(cfg) -> Path:
    """Where the replica ``tiny:<family>`` of a config's dataset lives (built on first use by ``ensure_tiny_model``);
    a run that starts from a registered adapter (model.adapter) uses the replica that adapter was trained on."""
    from ..errors import ConfigError
    from ..home import home_dir

    if getattr(cfg.model, "adapter", None):
        from .start import start_adapter

        start = start_adapter(cfg)
        assert start is not None  # model.adapter is set
        return Path(start["base"])

    if not cfg.data.path:
        raise ConfigError(f"model.name '{cfg.model.name}' builds its tokenizer from local data, but data.hub_id is set.",
                          "use local files in data.path with the tiny model, or a real model with Hub data.")
    arch = cfg.model.name.split(":", 1)[1]
    return home_dir("models") / f"tiny-{arch}-{fingerprint(cfg.data.path, arch, TINY_VOCAB)}"


def ensure_tiny_model(cfg) -> str:
    """Build the config's replica if it is not there yet (under a lock: concurrent runs build it once).
    Needs the [train] extra: call it from a job process or the CLI, never from the MCP server."""
    from filelock import FileLock

    from ..errors import require_extra

    target = tiny_model_path(cfg)
    with FileLock(str(target) + ".lock", timeout=900):
        if not (target / "config.json").is_file():
            require_extra("torch", "train")
            build_tiny_model(cfg.data.path, target, arch=cfg.model.name.split(":", 1)[1], vocab_size=TINY_VOCAB)
    return str(target)


def stock_template(family: Family) -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{family.template}.jinja").read_text(encoding="utf-8")


def _read_rows(data_files: list[str]) -> list[dict]:
    from datasets import concatenate_datasets, load_dataset

    parts = [load_dataset("parquet" if f.endswith(".parquet") else "json", data_files=f, split="train")
             for f in data_files]
    return list(parts[0] if len(parts) == 1 else concatenate_datasets(parts))


def _training_texts(rows: list[dict], template: str, family: Family) -> list[str]:
    """The rows rendered with the chat template (what the tokenizer will see)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from .maskcheck import conversation, detect_format

    renderer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), bos_token=family.bos or "",
                                       eos_token=family.eos)
    renderer.chat_template = template
    texts = []
    pairs = bool(rows) and "chosen" in rows[0] and "rejected" in rows[0]
    prompts_only = bool(rows) and "prompt" in rows[0] and "completion" not in rows[0] and "messages" not in rows[0]
    fmt = "messages" if prompts_only or not rows else detect_format(rows[0].keys())
    for row in rows:
        if pairs:  # DPO rows: the prompt with each answer
            for answer in ("chosen", "rejected"):
                messages, tools, _ = conversation({"prompt": row["prompt"], "completion": row[answer],
                                                   "tools": row.get("tools")}, "prompt_completion")
                texts.append(_rendered(renderer, messages, tools))
            continue
        if prompts_only:  # GRPO rows: the prompt, and the reference solution where there is one
            messages = [{"role": "user", "content": str(row.get("prompt") or "")}]
            messages += [{"role": "assistant", "content": str(row["solution"])}] if row.get("solution") else []
            tools = None
        else:
            messages, tools, _ = conversation(row, fmt)
        texts.append(_rendered(renderer, messages, tools))
    return texts


def _rendered(renderer, messages: list[dict], tools) -> str:
    try:
        # tokenize=False: the rendered text (a str)
        return cast(str, renderer.apply_chat_template(messages, tools=tools, tokenize=False))
    except Exception:  # a row this template refuses (e.g. Llama's one call per turn): its raw text still counts
        return json.dumps(messages, ensure_ascii=False)


def build_tokenizer(texts: list[str], family: Family, template: str, vocab_size: int):
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors, trainers
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(family.special), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in family.plain_added])
    if family.adds_bos:
        bos = family.bos
        assert bos is not None, "a family whose tokenizer prepends bos names it"
        bpe.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bpe.token_to_id(bos))])
    named = {"bos_token": family.bos, "eos_token": family.eos, "pad_token": family.pad}
    if "<unk>" in family.special:
        named["unk_token"] = "<unk>"
    roles = {v for v in named.values() if v}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, **{k: v for k, v in named.items() if v},
        additional_special_tokens=[t for t in family.special if t not in roles])
    tokenizer.chat_template = template
    for name, token in family.extra.items():  # Gemma 4's media tokens, as its tokenizer names them
        setattr(tokenizer, name, token)
    return tokenizer


def build_model(family_name: str, tokenizer, family: Family, size: str = "tiny"):
    from transformers import GenerationConfig

    ids = tokenizer.convert_tokens_to_ids
    bos = ids(family.bos) if family.bos else None
    if size == "large" and family_name == "gemma4":
        raise ValueError("large replicas are built for qwen3 and llama3 (Gemma 4's layout has per-layer settings)")
    sizes = LARGE if size == "large" else SIZES
    width = len(tokenizer) + (LARGE_PADDING if size == "large" else 0)
    common: dict[str, Any] = {"vocab_size": width, "max_position_embeddings": 4096, "tie_word_embeddings": True,
                              "initializer_range": 0.1, "bos_token_id": bos, "eos_token_id": ids(family.eos),
                              "pad_token_id": ids(family.pad)}
    model: PreTrainedModel
    if family_name == "qwen3":
        from transformers import Qwen3Config, Qwen3ForCausalLM

        model = Qwen3ForCausalLM(Qwen3Config(**common, **sizes, head_dim=16))
    elif family_name == "llama3":
        from transformers import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(**common, **sizes, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}))
    else:
        model = _gemma4(common, ids)
    stops = [ids(t) for t in family.stops]
    model.generation_config = GenerationConfig(eos_token_id=stops, pad_token_id=ids(family.pad), bos_token_id=bos)
    return model


def _gemma4(common: dict, ids):
    """Gemma 4's multimodal wrapper at tiny size: the E2B layout (sliding layers then a full one,
    per-layer inputs) with one-layer vision and audio towers."""
    from transformers import Gemma4ForConditionalGeneration
    from transformers.models.gemma4.configuration_gemma4 import (
        Gemma4AudioConfig,
        Gemma4Config,
        Gemma4TextConfig,
        Gemma4VisionConfig,
    )

    text = Gemma4TextConfig(
        **{k: v for k, v in common.items() if k != "tie_word_embeddings"}, hidden_size=64, intermediate_size=128,
        num_hidden_layers=4, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
        layer_types=["sliding_attention"] * 3 + ["full_attention"], num_kv_shared_layers=0,
        vocab_size_per_layer_input=common["vocab_size"], hidden_size_per_layer_input=16, sliding_window=64)
    config = Gemma4Config(
        text_config=text,
        vision_config=Gemma4VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1),
        audio_config=Gemma4AudioConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2),
        boi_token_id=ids("<|image>"), eoi_token_id=ids("<image|>"), image_token_id=ids("<|image|>"),
        video_token_id=ids("<|video|>"), boa_token_id=ids("<|audio>"), eoa_token_index=ids("<audio|>"),
        audio_token_id=ids("<|audio|>"), tie_word_embeddings=True, initializer_range=0.1)
    return Gemma4ForConditionalGeneration(config)


def build_tiny_model(data_files: list[str], out_dir: str | Path, *, arch: str = "qwen3",
                     vocab_size: int = 2048, seed: int = 0, size: str = "tiny") -> Path:
    """Build the replica ``arch`` into ``out_dir`` (written to a temp folder first, then moved in place)."""
    import torch

    if arch not in FAMILIES:
        raise ValueError(f"unknown tiny family '{arch}' (allowed: {', '.join(FAMILIES)})")
    family, out_dir = FAMILIES[arch], Path(out_dir)
    template = stock_template(family)
    tokenizer = build_tokenizer(_training_texts(_read_rows(data_files), template, family), family, template, vocab_size)
    torch.manual_seed(seed)
    model = build_model(arch, tokenizer, family, size)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "tunepack_tiny.json").write_text(json.dumps({
            "builder_version": BUILDER_VERSION, "arch": arch, "class": type(model).__name__,
            "chat_template": family.template, "vocab_size": len(tokenizer), "seed": seed, "size": size,
            "data_files": list(data_files), "parameters": sum(p.numel() for p in model.parameters()),
        }, indent=2))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build a tiny CPU replica of a model family.")
    parser.add_argument("--data", nargs="+", required=True, help="jsonl/json/parquet files to train the tokenizer on")
    parser.add_argument("-o", "--out", required=True, help="output model folder")
    parser.add_argument("--family", "--arch", dest="arch", default="qwen3", choices=list(FAMILIES))
    parser.add_argument("--vocab-size", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", choices=("tiny", "large"), default="tiny",
                        help="large: a wider, deeper replica with the same tokenizer (a distillation teacher)")
    args = parser.parse_args(argv)
    path = build_tiny_model(args.data, args.out, arch=args.arch, vocab_size=args.vocab_size, seed=args.seed,
                            size=args.size)
    print(json.dumps({"model_dir": str(path)}))


if __name__ == "__main__":
    main()
