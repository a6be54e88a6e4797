"""A memory quote for distillation: teacher + student + both models' logits on one GPU.

Coarse on purpose (it decides a flavor and whether the teacher loads in 4-bit, not the last gigabyte):
- weights: parameters x bytes per parameter (bf16 2, fp32 4, nf4 about 0.56 with its scales and the layers it
  leaves in bf16); parameters come from the model's own files when they are local (safetensors index or file
  sizes), else from its name (``Qwen3-4B`` -> 4e9; Gemma's ``E2B`` = effective 2B, about 2.5x that in stored
  parameters with the per-layer embeddings), and the quote says which;
- the student's LoRA training state: about 1 % of its parameters as trainable weights, gradients and Adam moments;
- logits: distillation keeps the full-vocabulary logits of both models for every token of a micro-batch, plus
  their log-softmaxes and the gradient (about five fp32 copies) -- for a 262k vocabulary this dominates;
- 1.5 GB of CUDA context and allocator slack, and 10 % headroom on the GPU.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0, "4bit": 0.56}
FAMILY_VOCAB = ((re.compile(r"gemma", re.I), 262144), (re.compile(r"qwen", re.I), 151936),
                (re.compile(r"llama", re.I), 128256))
OVERHEAD_GB = 1.5
HEADROOM = 0.9
GIB = 2**30


def model_facts(name: str, revision: str | None = None) -> dict:
    """{parameters, vocab, hidden, layers, source} of a model folder, a cached Hub model, or its name alone."""
    folder = Path(name) if Path(name).is_dir() else _cached(name, revision)
    if folder is not None:
        facts = _from_folder(folder)
        if facts:
            return facts
    return _from_name(name)


def _cached(repo_id: str, revision: str | None) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except ValueError:  # not a repo id (huggingface_hub's validation errors are ValueErrors)
        return None
    return Path(found).parent if isinstance(found, str) else None


def _from_folder(folder: Path) -> dict | None:
    config_file = folder / "config.json"
    if not config_file.is_file():
        return None
    config = json.loads(config_file.read_text(encoding="utf-8"))
    text = config.get("text_config") or config
    dtype = str(config.get("torch_dtype") or config.get("dtype") or text.get("dtype") or "float32")
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        stored = json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size", 0)
    else:
        stored = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    if not stored:
        return None
    return {"parameters": int(stored / BYTES.get(dtype, 2.0)), "vocab": int(text.get("vocab_size") or 0),
            "hidden": text.get("hidden_size"), "layers": text.get("num_hidden_layers"),
            "source": f"the model's files ({folder})"}


def _from_name(name: str) -> dict:
    found = re.search(r"(?<![A-Za-z0-9])(E?)(\d+(?:\.\d+)?)\s*[bB](?![A-Za-z])", name.split("/")[-1])
    vocab = next((v for pattern, v in FAMILY_VOCAB if pattern.search(name)), 0)
    if not found:
        return {"parameters": 0, "vocab": vocab, "hidden": None, "layers": None,
                "source": "unknown (no local files, and the name gives no size)"}
    effective = found.group(1) == "E"
    count = float(found.group(2)) * 1e9 * (2.5 if effective else 1.0)
    how = "its name (E = effective parameters; stored about 2.5x with per-layer embeddings)" if effective else "its name"
    return {"parameters": int(count), "vocab": vocab, "hidden": None, "layers": None, "source": how}


def quote(student: dict, teacher: dict, *, gpu_gb: float | None, student_4bit: bool, teacher_setting: str,
          micro_batch: int, max_length: int, cuda: bool = True) -> dict:
    """The memory plan: teacher and student weights, the logits, the total against ``gpu_gb`` (None: a CPU or
    local machine, quoted but not judged), and whether the teacher loads in 4-bit (``teacher_setting`` auto:
    only when it does not fit otherwise)."""
    full = "bfloat16" if cuda else "float32"
    vocab = max(student["vocab"], teacher["vocab"])
    logits_gb = micro_batch * max_length * vocab * 4 * 5 / GIB
    student_gb = student["parameters"] * (BYTES["4bit"] if student_4bit else BYTES[full]) / GIB
    student_gb += student["parameters"] * 0.01 * 16 / GIB  # LoRA weights, gradients, Adam moments (fp32)

    def total(teacher_4bit: bool) -> float:
        teacher_gb = teacher["parameters"] * (BYTES["4bit"] if teacher_4bit else BYTES[full]) / GIB
        return teacher_gb + student_gb + logits_gb + (OVERHEAD_GB if cuda else 0.0)

    usable = gpu_gb * HEADROOM if gpu_gb else None
    teacher_4bit = cuda and (teacher_setting == "4bit" or (
        teacher_setting == "auto" and usable is not None and total(False) > usable))
    needed = total(teacher_4bit)
    teacher_gb = teacher["parameters"] * (BYTES["4bit"] if teacher_4bit else BYTES[full]) / GIB
    plan = {"teacher": {"parameters": teacher["parameters"], "from": teacher["source"],
                        "weights": "4bit" if teacher_4bit else full, "gb": round(teacher_gb, 1)},
            "student": {"parameters": student["parameters"], "from": student["source"],
                        "weights": "4bit" if student_4bit else full, "gb": round(student_gb, 1)},
            "logits_gb": round(logits_gb, 1), "vocab": vocab, "micro_batch": micro_batch, "max_length": max_length,
            "total_gb": round(needed, 1), "gpu_gb": gpu_gb,
            "fits": None if usable is None else needed <= usable}
    if usable is not None and not plan["fits"]:
        plan["advice"] = _advice(needed, usable, logits_gb, teacher_4bit, teacher_setting)
    return plan


def _advice(needed: float, usable: float, logits_gb: float, teacher_4bit: bool, setting: str) -> str:
    steps = []
    if not teacher_4bit:
        steps.append("load the teacher in 4-bit (teacher.quantization: 4bit or auto)" if setting == "none" else "")
    if logits_gb > 0.25 * needed:
        steps.append("halve training.per_device_train_batch_size or training.max_length (the two models' logits "
                     f"take {logits_gb:.1f} GB)")
    steps.append("pick a flavor with more GPU memory")
    return f"needs about {needed:.1f} GB, the GPU offers {usable:.1f} usable: " + "; ".join(s for s in steps if s)
