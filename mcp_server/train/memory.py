"""The memory plan of an SFT or GRPO run: what one micro-batch needs on the device, before a GPU is paid for.

    plan = memory_plan(cfg, gpu_gb=24.0, cuda=True, batch=Batch(sequences=4, length=1024))

A coarse sum, to pick a flavor and to see which knob matters (distillation has its own, methods/distill/memory.py):
- weights: the model's parameters x bytes (bf16 2, fp32 4 on a CPU; QLoRA: nf4 about 0.56 with its scales, the
  embeddings stay bf16). Parameters come from the architecture in the model's config.json (a local folder, the Hub
  cache, or the table below for the tutorial's models), else from the safetensors' size, else from the name;
- LoRA: r x (in + out) of each targeted projection in each layer, and its training state in fp32 (weight,
  gradient, two Adam moments: 16 bytes a parameter);
- activations: what backward keeps for one micro-batch -- every layer's input with gradient checkpointing, about
  ten hidden-width and three MLP-width tensors per layer without it;
- logits: the full-vocabulary logits of every token in fp32, their log-softmax and gradient (3 copies): with
  Gemma's 262k vocabulary this is often the largest term;
- GRPO adds the generation batch's KV cache (completions generated at once x prompt + completion tokens);
- 1.5 GB of CUDA context and allocator slack, and 10 % headroom on the GPU.
The card and the manifest keep the plan beside the peak memory the run measured (device.peak_memory_gb).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..config import TrainConfig
from ..errors import TunepackError

GIB = 2**30
NF4_BYTES = 0.56
OVERHEAD_GB = 1.5
HEADROOM = 0.9
ARCH_KEYS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
             "num_key_value_heads", "head_dim", "tie_word_embeddings")

# config.json values of the models the tutorial trains, for a plan before their files are on this machine;
# tests/test_memory_plan.py checks the parameters they give against each model's published total
KNOWN = {
    "qwen/qwen3-0.6b": dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                            num_attention_heads=16, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True,
                            qk_norm=True),
    "meta-llama/llama-3.2-1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                                    num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                                    tie_word_embeddings=True),
}
FAMILY_VOCAB = {"gemma": 262144, "qwen": 151936, "llama": 128256}  # for a plan from the name alone
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class Batch:
    """One micro-batch: ``sequences`` of ``length`` tokens; GRPO also generates ``generated`` sequences at once."""

    sequences: int
    length: int
    generated: int = 0


def architecture(name: str, revision: str | None = None) -> dict:
    """The shape of a decoder (hidden, layers, heads, vocabulary …) and its parameter count, with where they came
    from: the model folder or Hub cache, the table of known models, else the name (``Qwen3-4B`` -> 4e9)."""
    folder = Path(name) if Path(name).is_dir() else _cached(name, revision)
    config = _read_config(folder) if folder is not None else None
    if config is not None and folder is not None:
        stored = _stored_parameters(folder, config)
        shaped = all(config.get(k) for k in ARCH_KEYS[:5])
        if stored or shaped:
            return {**{k: config.get(k) for k in ARCH_KEYS}, "parameters": stored or _count(config),
                    "embeddings": _embeddings(config),
                    "source": f"the model's files ({folder})" + ("" if stored else ", counted from config.json")}
    key = re.sub(r"-instruct$|-it$|-base$", "", name.lower())
    if key in KNOWN:
        known = KNOWN[key]
        return {**{k: known.get(k) for k in ARCH_KEYS}, "parameters": _count(known), "embeddings": _embeddings(known),
                "source": "tunepack's table of the tutorial's models (their config.json)"}
    found = re.search(r"(?<![A-Za-z0-9])(E?)(\d+(?:\.\d+)?)\s*[bB](?![A-Za-z])", name.split("/")[-1])
    count = float(found.group(2)) * 1e9 * (2.5 if found.group(1) else 1.0) if found else 0.0
    vocab = next((v for family, v in FAMILY_VOCAB.items() if family in name.lower()), None)
    return {**{k: None for k in ARCH_KEYS}, "vocab_size": vocab, "parameters": int(count),
            # Gemma's E models: the stored parameters beyond the effective ones are per-layer embeddings
            "embeddings": int(count * 0.6) if found and found.group(1) else 0,
            "source": "its name (no config.json here)" if found else "unknown: no config.json here and no size "
                                                                      "in the name"}


def _cached(repo_id: str, revision: str | None) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except ValueError:  # not a repo id
        return None
    return Path(found).parent if isinstance(found, str) else None


def _read_config(folder: Path) -> dict | None:
    path = folder / "config.json"
    if not path.is_file():
        return None
    config = json.loads(path.read_text(encoding="utf-8"))
    text = config.get("text_config") or config  # multimodal wrappers keep the decoder's shape in text_config
    return {**text, "tie_word_embeddings": config.get("tie_word_embeddings", text.get("tie_word_embeddings", True)),
            "torch_dtype": config.get("torch_dtype") or config.get("dtype") or text.get("dtype")}


def _stored_parameters(folder: Path, config: dict) -> int | None:
    """Parameters as stored (exact for any architecture, vision and audio towers included): the shapes in each
    safetensors file's header, else the index's byte total over the config's dtype width."""
    files = sorted(folder.glob("*.safetensors"))
    if files:
        return sum(_header_parameters(f) for f in files) or None
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return None
    total = json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size", 0)
    return int(total / (4 if str(config.get("torch_dtype")) == "float32" else 2)) or None


def _header_parameters(path: Path) -> int:
    """The element count of every tensor a safetensors file declares (its header: 8 bytes of length, then JSON)."""
    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    return sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")


def _count(c: dict) -> int:
    """A dense decoder's parameters from its config: embeddings, attention, gated MLP and norms per layer."""
    h, layers, vocab = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    hd = c.get("head_dim") or h // heads
    attention = h * heads * hd * 2 + h * kv * hd * 2 + (2 * hd if c.get("qk_norm") else 0)
    per_layer = attention + 3 * h * c["intermediate_size"] + 2 * h
    embeddings = vocab * h * (1 if c.get("tie_word_embeddings", True) else 2)
    return embeddings + layers * per_layer + h


def _embeddings(c: dict) -> int:
    """Embedding parameters (4-bit loading leaves them in bf16): the token table, Gemma's per-layer tables."""
    if not (c.get("vocab_size") and c.get("hidden_size")):
        return 0
    per_layer = (c.get("vocab_size_per_layer_input") or 0) * (c.get("hidden_size_per_layer_input") or 0) * \
        (c.get("num_hidden_layers") or 0)
    return c["vocab_size"] * c["hidden_size"] + per_layer


def lora_parameters(arch: dict, r: int, targets: str | list[str]) -> int | None:
    """r x (in + out) for each targeted projection of each layer (None when the shape is unknown)."""
    if not arch.get("hidden_size"):
        return None
    h, inter, layers = arch["hidden_size"], arch["intermediate_size"], arch["num_hidden_layers"]
    heads = arch["num_attention_heads"]
    hd = arch.get("head_dim") or h // heads
    kv = arch.get("num_key_value_heads") or heads
    sides = {"q_proj": h + heads * hd, "k_proj": h + kv * hd, "v_proj": h + kv * hd, "o_proj": heads * hd + h,
             "gate_proj": h + inter, "up_proj": h + inter, "down_proj": inter + h}
    chosen = PROJECTIONS if targets == "all-linear" else [t for t in targets if t in sides]
    return layers * r * sum(sides[t] for t in chosen)


def tiny_architecture(cfg: TrainConfig) -> dict:
    """A ``tiny:<family>`` replica: its folder when it is built, else the shape the builder gives it."""
    from .tiny_model import SIZES, TINY_VOCAB, tiny_model_path

    try:
        folder = tiny_model_path(cfg)
    except (OSError, ValueError, TypeError, TunepackError):  # sessions not converted yet, Hub data, a starting
        folder = None  # adapter not found: the shape alone
    if folder is not None and (folder / "config.json").is_file():
        return architecture(str(folder))
    family = cfg.model.name.split(":", 1)[1]
    shape = {**SIZES, "vocab_size": TINY_VOCAB, "tie_word_embeddings": True,
             "head_dim": 16 if family == "qwen3" else 32 if family == "gemma4" else None}
    return {**{k: shape.get(k) for k in ARCH_KEYS}, "parameters": _count(shape), "embeddings": _embeddings(shape),
            "source": f"the {cfg.model.name} replica's shape (built on first use)"}


def memory_plan(cfg: TrainConfig, *, gpu_gb: float | None, cuda: bool, batch: Batch,
                ram_gb: float | None = None) -> dict:
    """The plan in GB, its total against one GPU of ``gpu_gb`` (or, on a CPU, this machine's ``ram_gb``; None for
    both: quoted, not judged), and what to change when it does not fit."""
    arch = tiny_architecture(cfg) if cfg.model.is_tiny else architecture(cfg.model.name, cfg.model.revision)
    n = arch["parameters"]
    four_bit = cuda and cfg.quantization in ("4bit", "auto")
    full = 2.0 if cuda else 4.0
    embedded = min(arch.get("embeddings") or 0, n)
    weights = ((n - embedded) * NF4_BYTES + embedded * 2.0 if four_bit else n * full) / GIB
    lora = lora_parameters(arch, cfg.lora.r, cfg.lora.target_modules)
    lora_n = lora if lora is not None else int(n * 0.01)
    lora_gb = lora_n * 16 / GIB
    checkpointing = cfg.training.gradient_checkpointing is True or (
        cfg.training.gradient_checkpointing == "auto" and cuda)
    h, layers = arch.get("hidden_size"), arch.get("num_hidden_layers")
    tokens = batch.sequences * batch.length
    if h and layers:
        inter = arch["intermediate_size"]
        per_token = h * (layers + 10) + 3 * inter if checkpointing else layers * (10 * h + 3 * inter)
        activations = tokens * per_token * full / GIB
        kv = arch.get("num_key_value_heads") or arch["num_attention_heads"]
        hd = arch.get("head_dim") or h // arch["num_attention_heads"]
        generation = batch.generated * batch.length * layers * 2 * kv * hd * full / GIB
    else:  # shape unknown: a rule of thumb from the parameter count
        activations = tokens * (n ** 0.5) * 8 * full / GIB
        generation = batch.generated * batch.length * (n ** 0.5) * 2 * full / GIB
    vocab = arch.get("vocab_size") or 0
    logits = tokens * vocab * 4 * 3 / GIB
    total = weights + lora_gb + activations + logits + generation + (OVERHEAD_GB if cuda else 0.0)
    usable = gpu_gb * HEADROOM if gpu_gb else ram_gb * HEADROOM if (ram_gb and not cuda) else None
    plan = {"parameters": n, "from": arch["source"], "weights": "4bit" if four_bit else "bfloat16" if cuda else
            "float32", "weights_gb": _gb(weights), "lora_parameters": lora_n, "lora_gb": _gb(lora_gb),
            "activations_gb": _gb(activations), "logits_gb": _gb(logits), "generation_gb": _gb(generation),
            "total_gb": _gb(total), "gpu_gb": gpu_gb, "ram_gb": None if cuda else ram_gb,
            "fits": None if usable is None else total <= usable,
            "micro_batch": batch.sequences, "tokens_per_sequence": batch.length,
            "gradient_checkpointing": checkpointing, "vocab": vocab or None}
    if usable is not None and total > usable:
        plan["advice"] = _advice(plan, usable, four_bit, checkpointing)
    return plan


def _gb(value: float) -> float:
    return round(value, 2)


def _advice(plan: dict, usable: float, four_bit: bool, checkpointing: bool) -> str:
    steps = []
    if not four_bit and plan["gpu_gb"]:
        steps.append("quantization: 4bit (QLoRA)")
    if not checkpointing:
        steps.append("training.gradient_checkpointing: true")
    if plan["logits_gb"] + plan["activations_gb"] > 0.3 * plan["total_gb"]:
        steps.append(f"halve training.per_device_train_batch_size (doubling gradient_accumulation_steps keeps the "
                     f"batch) or training.max_length: logits {plan['logits_gb']} GB and activations "
                     f"{plan['activations_gb']} GB grow with both")
    steps.append("a flavor with more GPU memory")
    what = "one GPU" if plan["gpu_gb"] else "this machine's RAM"
    return f"needs about {plan['total_gb']} GB, {what} offers {usable:.1f} usable: " + "; ".join(steps)


def plan_line(plan: dict) -> str:
    """One line for a preflight check or a card."""
    where = f"{plan['gpu_gb']:g} GB per GPU" if plan["gpu_gb"] else f"{plan.get('ram_gb') or 0:g} GB of this machine's RAM"
    fits = "" if plan["fits"] is None else f" of {where} ({'fits' if plan['fits'] else 'does not fit'})"
    extra = f" + generation KV {plan['generation_gb']}" if plan["generation_gb"] else ""
    n = plan["parameters"]
    size = f"{n / 1e9:.2f} B" if n >= 1e8 else f"{n / 1e6:.2f} M"
    return (f"weights {plan['weights_gb']} ({plan['weights']}, {size} parameters from "
            f"{plan['from']}) + LoRA and its optimizer {plan['lora_gb']} + activations {plan['activations_gb']} + "
            f"logits {plan['logits_gb']}{extra} = {plan['total_gb']} GB for a micro-batch of {plan['micro_batch']} x "
            f"{plan['tokens_per_sequence']} tokens{fits}")
