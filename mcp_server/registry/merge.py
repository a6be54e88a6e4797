"""Merge a LoRA adapter into its full-precision base: the heavy half of ``export`` (torch, transformers, PEFT).

The base is loaded in its full dtype — never the 4-bit weights a QLoRA run trained against — the adapter is
applied with PEFT and folded in with ``merge_and_unload``. Logits on a short probe are taken before and after
the merge, so the result states how far the merged model is from base + adapter. Everything is written into
the folder it is given (the caller's staging folder).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import BaseModel

from ..errors import RegistryError

PROBE_TOKENS = 16
PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json", "video_preprocessor_config.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


class MergeReport(BaseModel):
    model_class: str
    compute_dtype: str
    dtype: str
    device: str
    parameters: int
    max_abs_logit_diff: float
    probe_tokens: int
    tokenizer_from: str


def _probe(model, vocab: int):
    import torch

    ids = (torch.arange(PROBE_TOKENS) * 7 + 3) % vocab
    with torch.no_grad():
        return model(input_ids=ids.unsqueeze(0).to(model.device)).logits.float().cpu()


def _vocab(model) -> int:
    return int(model.get_input_embeddings().weight.shape[0])


def _apply_adapter(model, adapter_dir: Path):
    from peft import PeftModel

    try:
        return PeftModel.from_pretrained(model, str(adapter_dir))
    except (ValueError, RuntimeError, KeyError) as exc:  # target modules missing, size mismatch
        first = str(exc).strip().splitlines()[0][:240] if str(exc).strip() else type(exc).__name__
        raise RegistryError(
            f"The adapter does not fit the base model {type(model).__name__}: {first}",
            "export against the base the adapter was trained on (the run's model.name; --base overrides it only "
            "for a local copy of that same model).") from None


def load_base(base_dir: Path, compute_dtype: str, *, trust_remote_code: bool = False):
    import torch
    from transformers import AutoModelForCausalLM

    cuda = torch.cuda.is_available()
    kwargs = {"dtype": getattr(torch, compute_dtype), "trust_remote_code": trust_remote_code}
    if cuda:
        kwargs["device_map"] = {"": 0}
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), **kwargs)  # full precision: no quantization
    return model.eval()


def merge_into(out_dir: Path, base_dir: Path, adapter_dir: Path, *, dtype: str, compute_dtype: str,
               trust_remote_code: bool = False) -> MergeReport:
    """Write the merged model, its tokenizer and processor files into ``out_dir``."""
    import torch

    model = load_base(base_dir, compute_dtype, trust_remote_code=trust_remote_code)
    peft_model = _apply_adapter(model, adapter_dir).eval()
    vocab = _vocab(model)
    before = _probe(peft_model, vocab)
    merged = peft_model.merge_and_unload()
    after = _probe(merged, vocab)
    diff = float((before - after).abs().max())
    if not torch.isfinite(after).all():
        raise RegistryError("The merged model produces non-finite logits (NaN or inf).",
                            "check the adapter: evaluate it first (tunepack eval run NAME); do not ship this merge.")
    merged = merged.to(getattr(torch, dtype))
    merged.save_pretrained(str(out_dir))
    source = save_tokenizer(out_dir, adapter_dir, base_dir)
    for name in PROCESSOR_FILES:  # multimodal wrappers (Gemma 4): what a server needs to build the processor
        if (base_dir / name).is_file() and not (out_dir / name).exists():
            shutil.copy2(base_dir / name, out_dir / name)
    return MergeReport(model_class=type(merged).__name__, compute_dtype=compute_dtype, dtype=dtype,
                       device=str(merged.device), parameters=sum(p.numel() for p in merged.parameters()),
                       max_abs_logit_diff=diff, probe_tokens=PROBE_TOKENS, tokenizer_from=source)


def save_tokenizer(out_dir: Path, adapter_dir: Path, base_dir: Path) -> str:
    """The tokenizer the run saved with the adapter (its chat template is the one trained on), else the base's."""
    from transformers import AutoTokenizer

    source = adapter_dir if any((adapter_dir / f).is_file() for f in TOKENIZER_FILES) else base_dir
    AutoTokenizer.from_pretrained(str(source)).save_pretrained(str(out_dir))
    return "adapter" if source == adapter_dir else "base"


def config_of(base_dir: Path) -> dict:
    path = base_dir / "config.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
