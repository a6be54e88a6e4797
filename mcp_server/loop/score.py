"""Paired scores: each held-out row's loss (mean negative log-likelihood, in nats, of the tokens a run would train
on: the model's own turns, under the mask the training checks) under the current adapter and under the candidate,
row by row, so the gain is judged on the paired difference.

    losses = row_losses(cfg, adapter_dir, rows)    # one float per row (None: no trained token fits)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import TrainConfig


def _model_source(cfg: TrainConfig) -> str:
    if cfg.model.is_tiny:
        from ..train.tiny_model import ensure_tiny_model

        return str(ensure_tiny_model(cfg))
    return cfg.model.name


def row_losses(cfg: TrainConfig, adapter_dir: str | Path | None, rows: list[dict]) -> list[float | None]:
    """The loss of each row's trained tokens under the base model + ``adapter_dir`` (None: the base alone), on CPU or
    the first GPU, rows cut at training.max_length as training cuts them."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..resources import chat_templates
    from ..train import maskcheck as mc

    source = _model_source(cfg)
    tokenizer = AutoTokenizer.from_pretrained(source, revision=cfg.model.revision)
    model: Any = AutoModelForCausalLM.from_pretrained(source, revision=cfg.model.revision, dtype=torch.float32)
    if adapter_dir is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter_dir))
    model.eval()
    column, tools_column = cfg.data.messages_column, cfg.data.tools_column
    fmt = mc.detect_format(rows[0].keys(), column) if rows else "conversational"
    needs_tools = mc.rows_with_tools(rows, fmt, column, tools_column) > 0
    template, _ = mc.resolve_chat_template(tokenizer, cfg.chat_template, fmt, cfg.model.name,
                                           needs_tools=needs_tools, packaged=chat_templates())
    out: list[float | None] = []
    with torch.no_grad():
        for row in rows:
            messages, tools, n_prompt = mc.conversation(row, fmt, column, tools_column)
            ids, mask, _, _ = mc.tokenize_row(tokenizer, messages, tools, template, n_prompt)
            ids, mask = ids[:cfg.training.max_length], mask[:cfg.training.max_length]
            targets = [i for i in range(1, len(ids)) if mask[i]]
            if not targets:
                out.append(None)
                continue
            logits = model(input_ids=torch.tensor([ids])).logits[0]
            logp = torch.log_softmax(logits[:-1].float(), dim=-1)
            picked = torch.tensor([logp[i - 1, ids[i]].item() for i in targets])
            out.append(float(-picked.mean()))
    return out
