"""Greedy generation of one assistant message through the model's own chat template (next-action, BFCL).

    gen = load_generator({"label": "adapter", "base": BASE, "adapter": DIR}, backend="auto")
    texts = gen.complete([(messages, tools), ...], max_new_tokens=128)
    turns = gen.complete_sessions([[(context, tools), ...], ...], 512, stop_tokens=("<tool_call|>",))

The prompt is ``apply_chat_template(messages, tools=tools, add_generation_prompt=True)`` of the
tokenizer the model carries (the adapter folder's, which is the template the run trained with;
else the base model's). The answer is decoded with its special tokens kept, so the family parser
(toolcalls.py) sees the same markers the template writes; generation stops at the model's own stop
tokens (and at ``stop_tokens``, where what is scored is decided earlier: the end of a call). On CUDA with vLLM
installed (backend auto|vllm) the base model is served by vLLM with the adapter as a LoRA request (vLLM caches
shared prefixes itself); else transformers (+ PEFT for the adapter) on CUDA or CPU. With transformers,
``complete_sessions`` decodes the turns of whole sessions with turndecode.py (each session read once, its turns
reusing the cache of the tokens they share, turns batched and refilled as they stop); ``engine="plain"`` is
``generate`` on left-padded batches of whole prompts, the reference the fast path is tested against.
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
        self.decoder: Any = None  # turndecode.TurnDecoder, made on first use

    def prompt(self, messages: list[dict], tools: list[dict] | None) -> str:
        try:
            return self.tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True,
                                                      tokenize=False)
        except Exception as exc:  # noqa: BLE001 - a template refusing a conversation is a data error
            raise KitError(f"The chat template of {self.model['label']} refuses a prompt ({type(exc).__name__}: "
                           f"{str(exc)[:200]}).", "shape the rows for this family (tunepack does it for "
                           "converted sessions and messages rows) or evaluate with the template the run used.") from exc

    def stop_ids(self, stop_tokens: tuple[str, ...] = ()) -> set[int]:
        """The model's own stop tokens, and those of ``stop_tokens`` that are single tokens of its vocabulary."""
        config = getattr(self.engine, "generation_config", None)
        stops = getattr(config, "eos_token_id", None) if config is not None else None
        if stops is None:
            stops = self.tokenizer.eos_token_id
        found = set(stops if isinstance(stops, list) else [stops]) - {None}
        vocab = self.tokenizer.get_vocab()
        return found | {vocab[t] for t in stop_tokens if t in vocab}

    def complete(self, prompts: list[tuple[list[dict], list[dict] | None]], max_new_tokens: int,
                 batch_size: int = 16, budgets: list[int] | None = None, stop_tokens: tuple[str, ...] = (),
                 engine: str = "fast", on_turn=None) -> list[str]:
        """Greedy answers; ``budgets`` caps each answer at its own token count (an agent episode's remaining
        budget), ``max_new_tokens`` the longest."""
        limits = [min(max_new_tokens, b) for b in budgets] if budgets else [max_new_tokens] * len(prompts)
        out = self.complete_sessions([[p] for p in prompts], [[limit] for limit in limits], batch_size, stop_tokens,
                                     engine, on_turn)
        return [turns[0] for turns in out]

    def complete_sessions(self, sessions: list[list[tuple[list[dict], list[dict] | None]]], limits,
                          batch_size: int = 16, stop_tokens: tuple[str, ...] = (), engine: str = "fast",
                          on_turn=None) -> list[list[str]]:
        """Greedy answers for every turn of every session, the turns of a session in order (the fast path reuses
        the cache of what consecutive prompts share). ``limits``: one number for every turn, or per session per
        turn. ``engine``: fast (turndecode.py) or plain (left-padded ``generate`` batches); vLLM serves both.
        ``on_turn(turns done)`` reports progress."""
        texts = [[self.prompt(m, t) for m, t in turns] for turns in sessions]
        limits = [[limits] * len(turns) for turns in texts] if isinstance(limits, int) else limits
        stops = self.stop_ids(stop_tokens)
        flat, flat_limits = [t for turns in texts for t in turns], [n for ns in limits for n in ns]
        if self.backend == "vllm":
            answers = self._vllm(flat, flat_limits, stops)
        elif engine == "plain":
            answers = []
            for i in range(0, len(flat), batch_size):
                answers += self._hf(flat[i:i + batch_size], flat_limits[i:i + batch_size], stops)
                if on_turn is not None:
                    on_turn(len(answers))
        else:
            answers = self._fast(texts, limits, stops, batch_size, on_turn)
        if on_turn is not None:
            on_turn(len(answers))
        out, i = [], 0
        for turns in texts:
            out.append(answers[i:i + len(turns)])
            i += len(turns)
        return out

    def _fast(self, texts: list[list[str]], limits: list[list[int]], stops: set[int], lanes: int,
              on_turn=None) -> list[str]:
        from .turndecode import TurnDecoder

        if self.decoder is None:
            self.decoder = TurnDecoder(self.engine, lanes=lanes)
        self.decoder.lanes = lanes
        prompts = [[list(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in turns] for turns in texts]
        out = self.decoder.run(prompts, limits, stops, on_turn)
        return [self.tokenizer.decode(ids, skip_special_tokens=False) for turns in out for ids in turns]

    def _hf(self, texts: list[str], limits: list[int], stops: set[int]) -> list[str]:
        """One left-padded batch, greedy; each answer decoded up to its first stop token (or its limit)."""
        import torch

        self.tokenizer.padding_side = "left"
        ids = self.tokenizer(texts, return_tensors="pt", add_special_tokens=False, padding=True).to(self.engine.device)
        with torch.no_grad():
            out = self.engine.generate(**ids, max_new_tokens=max(limits), do_sample=False, eos_token_id=sorted(stops),
                                       pad_token_id=self.tokenizer.pad_token_id)
        new = out[:, ids["input_ids"].shape[1]:]
        return [self.tokenizer.decode(row[: min(self._stop(row, stops), limit)], skip_special_tokens=False)
                for row, limit in zip(new, limits, strict=True)]

    @staticmethod
    def _stop(row, stops: set[int]) -> int:
        """The length up to and including the first stop token (what follows it in a batch is padding)."""
        for i, token in enumerate(row.tolist()):
            if token in stops:
                return i + 1
        return len(row)

    def _vllm(self, texts: list[str], limits: list[int], stops: set[int]) -> list[str]:
        from vllm import SamplingParams
        from vllm.lora.request import LoRARequest

        params = [SamplingParams(temperature=0.0, max_tokens=limit, skip_special_tokens=False,
                                 stop_token_ids=sorted(stops)) for limit in limits]
        adapter = self.model.get("adapter")
        request = LoRARequest("adapter", 1, adapter) if adapter else None
        outs = self.engine.generate(texts, params, lora_request=request, use_tqdm=False)
        return [self._with_stop(o.outputs[0]) for o in outs]

    def _with_stop(self, output) -> str:
        """vLLM's text, ending with the stop token it stopped at (it leaves a stop token id's text out; the family
        parser needs a call's closing marker to read the call)."""
        reason = getattr(output, "stop_reason", None)
        if not isinstance(reason, int):
            return output.text
        marker = self.tokenizer.decode([reason], skip_special_tokens=False)
        return output.text if output.text.endswith(marker) else output.text + marker


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

        # on a CPU in float32, as the transformers path runs there (vLLM's "auto" casts a float32 checkpoint down)
        engine = LLM(model=model["base"], enable_lora=bool(model.get("adapter")), max_lora_rank=256,
                     **({} if cuda_available() else {"dtype": "float32"}))
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
