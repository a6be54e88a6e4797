"""Distillation's checks before spending: where the teacher loads from, whether the mode can run for the
family, whether teacher and student share their token ids, and the memory plan.

Host side, light: the tokenizer comparison needs ``transformers`` (the [train] extra) and both tokenizers on
this machine (local folders, the tiny replica, or the Hugging Face cache); otherwise it is deferred to the
job, whose script runs the same comparison (``vocab_check.py``, embedded) before it loads any weights.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from ...config import TrainConfig
from ...errors import ConfigError
from ...train.families import template_for_model
from ...train.maskcheck import conversation
from .memory import model_facts, quote
from .vocab_check import VocabMismatch, compare_encodings, compare_vocabularies

BROKEN_ON_POLICY = {
    "gemma4": "on-policy generation through Gemma 4's multimodal wrapper crashed in the tutorial's runs and is not "
              "proven here on a GPU",
}
TOKENIZER_ROWS = 16


def teacher_source(cfg: TrainConfig) -> dict:
    """{name, base, adapter, revision, tokenizer}: a PEFT adapter folder loads its base model plus the adapter
    (merged in memory); its tokenizer is the adapter folder's when it saved one, else the base model's."""
    teacher = cfg.teacher
    assert teacher is not None, "a distillation config names its teacher"
    folder = Path(teacher.name)
    adapter_config = folder / "adapter_config.json"
    if not adapter_config.is_file():
        return {"name": teacher.name, "base": teacher.name, "adapter": None, "revision": teacher.revision,
                "tokenizer": teacher.name}
    base = json.loads(adapter_config.read_text(encoding="utf-8")).get("base_model_name_or_path")
    if not base:
        raise ConfigError(f"The teacher adapter {folder} does not name its base model (base_model_name_or_path).",
                          "point teacher.name at the base model folder or Hub id, or at an adapter saved by PEFT.")
    own = (folder / "tokenizer_config.json").is_file()
    return {"name": teacher.name, "base": base, "adapter": str(folder), "revision": teacher.revision,
            "tokenizer": str(folder) if own else base}


def family(name: str, revision: str | None = None) -> str | None:
    stock, _ = template_for_model(name, revision)
    return next((f for f in ("gemma4", "llama3", "qwen3") if (stock or "").startswith(f)), None)


def mode_of(lmbda: float) -> str:
    return "off-policy" if lmbda == 0 else "on-policy" if lmbda == 1 else f"mixed-lmbda{lmbda:g}"


def divergence_of(beta: float) -> str:
    return ("forward KL (teacher || student)" if beta == 0 else "reverse KL (student || teacher)" if beta == 1
            else "Jensen-Shannon" if beta == 0.5 else f"generalized JSD (beta {beta:g})")


def check_mode(cfg: TrainConfig) -> None:
    """Refuse on-policy batches (distill.lmbda > 0) where the family's generation path is known to break."""
    if cfg.distill.lmbda == 0:
        return
    source = teacher_source(cfg)
    for who, name, revision in (("student", cfg.model.name, cfg.model.revision),
                                ("teacher", source["base"], source["revision"])):
        found = family(name, revision)
        if found in BROKEN_ON_POLICY:
            raise ConfigError(
                f"distill.lmbda is {cfg.distill.lmbda:g}, so the student generates on-policy, but the {who} "
                f"({name}) is {found}: {BROKEN_ON_POLICY[found]}.",
                "set distill.lmbda: 0 (off-policy: the teacher's distribution on the recorded turns), which is what "
                "the tutorial ran for this family.")


def check_tokenizers(cfg: TrainConfig, rows: list[dict], student_path: str | None) -> dict:
    """Compare the two tokenizers on the run's rendered rows, here when both are at hand; raises ConfigError on a
    mismatch. Returns {status: pass | deferred, detail}."""
    if importlib.util.find_spec("transformers") is None:
        return {"status": "deferred", "detail": "transformers is not installed here ([train] extra): the job's "
                "script compares the tokenizers before it loads any weights"}
    source = teacher_source(cfg)
    where = {"student": _local(student_path or cfg.model.name, cfg.model.revision),
             "teacher": _local(source["tokenizer"], source["revision"])}
    missing = [who for who, path in where.items() if path is None]
    if missing:
        return {"status": "deferred", "detail": f"the {' and '.join(missing)} tokenizer is not on this machine: the "
                "job's script compares the tokenizers before it loads any weights"}
    from transformers import AutoTokenizer

    student, teacher = (_text_tokenizer(AutoTokenizer.from_pretrained(str(where[w]))) for w in ("student", "teacher"))
    texts = _rendered(student, rows, cfg)
    try:
        vocab = compare_vocabularies(student.get_vocab(), teacher.get_vocab())
        seen = compare_encodings(texts, lambda t: student(t, add_special_tokens=False)["input_ids"],
                                 lambda t: teacher(t, add_special_tokens=False)["input_ids"],
                                 show=lambda i: repr(student.convert_ids_to_tokens(i)))
    except VocabMismatch as exc:
        raise ConfigError(exc.problem, exc.fix) from None
    return {"status": "pass", "detail": f"identical ids on {seen['rows']} rendered rows ({seen['tokens']} tokens); "
            f"one vocabulary of {vocab['tokens']} tokens"}


def _local(name: str, revision: str | None) -> Path | None:
    if Path(name).is_dir():
        return Path(name)
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(name, "tokenizer_config.json", revision=revision)
    except ValueError:  # not a repo id
        return None
    return Path(found).parent if isinstance(found, str) else None


def _text_tokenizer(tokenizer):
    return tokenizer.tokenizer if not hasattr(tokenizer, "convert_tokens_to_ids") and hasattr(tokenizer, "tokenizer") \
        else tokenizer


def _rendered(tokenizer, rows: list[dict], cfg: TrainConfig) -> list[str]:
    """The first rows as the student's own chat template renders them (the training template differs only in
    its generation markers, which are no tokens)."""
    fmt = "prompt_completion" if "completion" in (rows[0] if rows else {}) else "messages"
    texts = []
    for row in rows[:TOKENIZER_ROWS]:
        messages, tools, _ = conversation(row, fmt, cfg.data.messages_column, cfg.data.tools_column)
        texts.append(tokenizer.apply_chat_template(messages, tools=tools, tokenize=False))
    return texts


def _student_name(cfg: TrainConfig) -> str:
    if not cfg.model.is_tiny:
        return cfg.model.name
    from ...train.tiny_model import tiny_model_path

    return str(tiny_model_path(cfg)) if cfg.data.path else cfg.model.name


def distill_plan(cfg: TrainConfig, *, gpu_gb: float | None, cuda: bool, flavor: str | None) -> dict:
    """What the run will do, before it spends: mode, divergence, teacher, and the memory quote on the flavor."""
    source = teacher_source(cfg)
    student = model_facts(_student_name(cfg), cfg.model.revision)
    teacher = model_facts(source["base"], source["revision"])
    student_4bit = cuda and cfg.quantization != "none"
    memory = quote(student, teacher, gpu_gb=gpu_gb, student_4bit=student_4bit,
                   teacher_setting=cfg.teacher.quantization if cfg.teacher else "auto",
                   micro_batch=cfg.training.per_device_train_batch_size, max_length=cfg.training.max_length,
                   cuda=cuda)
    return {"mode": mode_of(cfg.distill.lmbda), "lmbda": cfg.distill.lmbda, "beta": cfg.distill.beta,
            "divergence": divergence_of(cfg.distill.beta), "temperature": cfg.distill.temperature,
            "teacher": {**source, "quantization": cfg.teacher.quantization if cfg.teacher else None},
            "flavor": flavor, "memory": memory, "teacher_4bit": memory["teacher"]["weights"] == "4bit"}
