"""Greedy generation of one assistant message through the model's own chat template (next-action, BFCL).

    gen = load_generator({"label": "adapter", "base": BASE, "adapter": DIR}, backend="auto")
    texts = gen.complete([(messages, tools), ...], max_new_tokens=128)

The prompt is ``apply_chat_template(messages, tools=tools, add_generation_prompt=True)`` of the
tokenizer the model carries (the adapter folder's, which is the template the run trained with;
else the base model's). The answer is decoded with its special tokens kept, so the family parser
(toolcalls.py) sees the same markers the template writes; generation stops at the model's own stop
tokens. On CUDA with vLLM installed (backend auto|vllm) the base model is served by vLLM with the
adapter as a LoRA request; else transformers (+ PEFT for the adapter) on CUDA or CPU.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from .errors import KitError


def cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def has_module(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def tokenizer_folder(model: dict) -> str:
    """Where the chat template comes from: the adapter folder when it carries a tokenizer, else the base."""
    adapter = model.get("adapter")
    if adapter and any((Path(adapter) / f).is_file() for f in ("tokenizer_config.json", "tokenizer.json")):
        return adapter
    return model["base"]


def template_sha256(template: str | None) -> str | None:
    return hashlib.sha256(template.encode()).hexdigest() if template else None


def weights_index_sha256(base: str) -> str | None:
    """sha256 of the base weights' index (model.safetensors.index.json, else the single weights file's
    header-bearing first MiB), for a local folder; None for a Hub id not on this machine."""
    folder = Path(base)
    if not folder.is_dir():
        return None
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return hashlib.sha256(index.read_bytes()).hexdigest()
    single = folder / "model.safetensors"
    if single.is_file():
        with single.open("rb") as handle:
            return hashlib.sha256(handle.read(1 << 20)).hexdigest()
    return None


class Generator:
    """One loaded model; ``complete`` returns the decoded assistant messages, one per prompt."""

    def __init__(self, model: dict, tokenizer, engine, backend: str):
        self.model, self.tokenizer, self.engine, self.backend = model, tokenizer, engine, backend
        self.template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else None

    def prompt(self, messages: list[dict], tools: list[dict] | None) -> str:
        try:
            return self.tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True,
                                                      tokenize=False)
        except Exception as exc:  # noqa: BLE001 - a template refusing a conversation is a data error
            raise KitError(f"The chat template of {self.model['label']} refuses a prompt ({type(exc).__name__}: "
                           f"{str(exc)[:200]}).", "shape the rows for this family (tunepack does it for "
                           "converted sessions and messages rows) or evaluate with the template the run used.") from exc

    def complete(self, prompts: list[tuple[list[dict], list[dict] | None]], max_new_tokens: int,
                 batch_size: int = 16, budgets: list[int] | None = None) -> list[str]:
        """Greedy answers; ``budgets`` caps each answer at its own token count (an agent episode's remaining
        budget), ``max_new_tokens`` the longest."""
        texts = [self.prompt(m, t) for m, t in prompts]
        limits = [min(max_new_tokens, b) for b in budgets] if budgets else [max_new_tokens] * len(texts)
        if self.backend == "vllm":
            return self._vllm(texts, limits)
        return [out for i in range(0, len(texts), batch_size) for out in self._hf(texts[i:i + batch_size],
                                                                                   limits[i:i + batch_size])]

    def _hf(self, texts: list[str], limits: list[int]) -> list[str]:
        """One left-padded batch, greedy; each answer decoded up to its first stop token (or its limit)."""
        import torch

        self.tokenizer.padding_side = "left"
        ids = self.tokenizer(texts, return_tensors="pt", add_special_tokens=False, padding=True).to(self.engine.device)
        with torch.no_grad():
            out = self.engine.generate(**ids, max_new_tokens=max(limits), do_sample=False,
                                       pad_token_id=self.tokenizer.pad_token_id)
        new = out[:, ids["input_ids"].shape[1]:]
        return [self.tokenizer.decode(row[: min(self._stop(row), limit)], skip_special_tokens=False)
                for row, limit in zip(new, limits, strict=True)]

    def _stop(self, row) -> int:
        """The length up to and including the first stop token (what follows it in a batch is padding)."""
        stops = self.engine.generation_config.eos_token_id
        stops = set(stops if isinstance(stops, list) else [stops]) - {None}
        for i, token in enumerate(row.tolist()):
            if token in stops:
                return i + 1
        return len(row)

    def _vllm(self, texts: list[str], limits: list[int]) -> list[str]:
        from vllm import SamplingParams
        from vllm.lora.request import LoRARequest

        params = [SamplingParams(temperature=0.0, max_tokens=limit, skip_special_tokens=False) for limit in limits]
        adapter = self.model.get("adapter")
        request = LoRARequest("adapter", 1, adapter) if adapter else None
        outs = self.engine.generate(texts, params, lora_request=request, use_tqdm=False)
        return [o.outputs[0].text for o in outs]


def check_folders(model: dict) -> None:
    """A model given as a local folder (base or adapter) must exist; Hub ids are left to the loader."""
    for path in (model["base"], model.get("adapter")):
        if path and path.startswith(("/", "./", "../", "~")) and not os.path.isdir(os.path.expanduser(path)):
            raise KitError(f"The model folder '{path}' ({model['label']}) does not exist.",
                           "check the registry version (registry_list) or the base model path; a Hub id is "
                           "written namespace/name.")


def use_vllm(backend: str) -> bool:
    """vLLM for backend vllm (refused when it is missing), or for auto on CUDA with vLLM installed."""
    if backend == "vllm" and not has_module("vllm"):
        raise KitError("eval.backend is 'vllm' but vLLM is not installed.",
                       "use backend auto/hf, or pip install vllm on a GPU machine.")
    return backend == "vllm" or (backend == "auto" and cuda_available() and has_module("vllm"))


def load_generator(model: dict, backend: str = "auto") -> Generator:
    """The model {"label", "base"[, "adapter"]} loaded for greedy generation."""
    from transformers import AutoTokenizer

    check_folders(model)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder(model))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if use_vllm(backend):
        from vllm import LLM

        engine = LLM(model=model["base"], enable_lora=bool(model.get("adapter")), max_lora_rank=256)
        return Generator(model, tokenizer, engine, "vllm")
    return Generator(model, tokenizer, _hf_model(model), "hf")


def _hf_model(model: dict) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    device = "cuda:0" if cuda_available() else "cpu"
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    engine: Any = AutoModelForCausalLM.from_pretrained(model["base"], dtype=dtype)
    engine = engine.to(device)
    if model.get("adapter"):
        from peft import PeftModel

        engine = PeftModel.from_pretrained(engine, model["adapter"]).to(device)
    engine.eval()
    return engine


def describe(gen: Generator) -> dict:
    """What was loaded, for the manifest of the eval: backend, template and weights-index hashes."""
    return {"backend": gen.backend, "template_sha256": template_sha256(gen.template),
            "base_weights_index_sha256": weights_index_sha256(gen.model["base"]),
            "tokenizer_from": tokenizer_folder(gen.model)}
