"""How the training script goes fast on the machine it lands on, decided up front and logged with the reason.

Embedded verbatim in the rendered script (standard library only) and tested on its own, flavor by flavor.
``speed_plan`` takes the config's settings and the machine's facts and returns every choice:
- packing (best-fit decreasing, padding-free): on wherever the model keeps packed sequences isolated (the
  script proves it at start on two real rows; see ``packing_isolated`` in the script); the rows of a
  padded batch are otherwise mostly padding on agent traces, whose lengths range from a hundred tokens to
  the window size. Without a varlen attention kernel (flash attention) a padding-free batch is one long
  sequence whose dense attention grows with the square of the whole batch, so there each micro-batch is
  one packed row and the batch is made up with gradient accumulation (the same rows per optimizer step);
- length-grouped batches when packing is off (rows of similar length share a batch: less padding);
- activation checkpointing only when memory needs it (never on CPU; on CUDA when the model's weights take
  a large share of the GPU or the batch is long);
- on CUDA: the fused AdamW, Liger kernels and a flash-attention implementation when they are installed,
  dataloader workers with pinned memory; on CPU: no workers (they would take the cores the math needs).
"""

from typing import Any

# attention implementation → (the package it needs, the least CUDA compute capability)
FLASH = {"flash_attention_2": ("flash_attn", (8, 0)), "kernels-community/flash-attn3": ("kernels", (9, 0))}


def attention_for(setting: str, cuda: bool, capability=None, installed: tuple = ()) -> tuple[str, str]:
    """(attention implementation, why) for ``model.attention``: auto = a varlen flash kernel when one is
    installed and the GPU runs it, else PyTorch's scaled-dot-product attention."""
    if setting != "auto":
        return setting, "set in model.attention"
    for name, (package, least) in FLASH.items():
        if cuda and package in installed and capability and tuple(capability) >= least:
            return name, f"auto: {package} is installed and the GPU runs it"
    return "sdpa", "auto: PyTorch's scaled-dot-product attention (no flash-attention kernel for this machine)"


def speed_plan(*, packing, checkpointing, batch: int, accumulation: int, cuda: bool, attention: str = "sdpa",
               gpu_memory_gb: float = 0.0, weights_gb: float = 0.0, max_length: int = 1024,
               installed: tuple = ()) -> dict:
    """Every speed choice with its reason. ``packing`` / ``checkpointing``: True, False or "auto"."""
    plan: dict[str, Any] = {"reasons": []}

    def choose(key, value, why):
        plan[key] = value
        plan["reasons"].append(f"{key}={value}: {why}")

    if packing == "auto":
        choose("packing", True, "auto: on wherever packed rows stay isolated (proven on real rows at start)")
    else:
        choose("packing", bool(packing), "set in training.packing")
    varlen = attention in FLASH
    if plan["packing"] and not varlen and batch > 1:
        choose("micro_batch", 1, f"packed rows without a varlen kernel: one row per micro-batch, {batch} rows per "
               "step through gradient accumulation (a padding-free batch would be one sequence of "
               f"{batch}x{max_length} tokens with dense attention)")
        choose("accumulation", accumulation * batch, "keeps the rows per optimizer step")
    else:
        choose("micro_batch", batch, "as configured")
        choose("accumulation", accumulation, "as configured")
    choose("sampling", "random" if plan["packing"] else "group_by_length",
           "packed rows are full already" if plan["packing"] else "padded batches of rows of similar length")
    if checkpointing == "auto":
        heavy = cuda and (weights_gb > 0.35 * gpu_memory_gb or plan["micro_batch"] * max_length > 16384)
        choose("checkpointing", heavy, "auto: memory needs it (weights or activations near the GPU's size)" if heavy
               else "auto: off, no GPU memory pressure (it costs about a third more compute)" if cuda
               else "auto: off on CPU (memory is not the limit; it costs about a third more compute)")
    else:
        choose("checkpointing", bool(checkpointing), "set in training.gradient_checkpointing")
    choose("optimizer", "adamw_torch_fused" if cuda else "adamw_torch",
           "fused AdamW on CUDA" if cuda else "PyTorch AdamW (the fused kernel is CUDA's)")
    liger = cuda and "liger_kernel" in installed
    choose("liger", liger, "Liger kernels are installed" if liger else "Liger kernels need CUDA and liger-kernel")
    choose("workers", 2 if cuda else 0, "dataloader workers feed the GPU" if cuda
           else "no dataloader workers: the cores go to the math")
    return plan


def generation_plan(setting: str, cuda: bool, vllm_installed: bool, use_4bit: bool) -> dict:
    """How GRPO generates its completions, and why (grpo.generation: auto | vllm | transformers).
    vLLM colocate shares the training GPU (30 % of its memory for the engine, the LoRA weights synced in bf16
    each step); QLoRA with vLLM breaks in TRL (the adapter would be merged into 4-bit weights, lossy), so a 4-bit
    model generates through transformers on its own 4-bit weights."""
    plan: dict[str, Any] = {"use_vllm": False, "vllm_mode": None, "vllm_gpu_memory_utilization": None, "error": None}
    if setting == "vllm" and use_4bit:
        plan["error"] = ("grpo.generation is vllm but the model trains in 4-bit (QLoRA): TRL would merge the "
                         "adapter into 4-bit weights for vLLM, which is lossy.",
                         "set quantization: none (LoRA in bf16, vLLM colocate), or grpo.generation: transformers.")
        return plan
    if setting == "transformers" or not cuda:
        plan["reason"] = "transformers generate: " + ("as configured" if setting == "transformers" else "no CUDA")
    elif use_4bit:
        plan["reason"] = ("transformers generate on the 4-bit weights: QLoRA with vLLM breaks in TRL (the adapter "
                          "would be merged into 4-bit weights, lossy)")
    elif not vllm_installed:
        plan["reason"] = "transformers generate: vllm is not installed (grpo.generation: vllm adds it to the script)"
        if setting == "vllm":
            plan["error"] = ("grpo.generation is vllm but vllm is not installed here.",
                             "run the script with uv (its header lists vllm), or install vllm.")
    else:
        plan.update(use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.3,
                    reason="vLLM colocate: the engine shares the training GPU (30 % of its memory), LoRA in bf16 "
                           "synced into it every step")
    return plan
