"""DPO, preference optimisation: TRL's DPOTrainer on ``{prompt, chosen, rejected}`` rows of messages, the reference
being the starting model (PEFT: the adapter switched off). pairs.py checks the rows, cuts each pair where its
answers part and builds the loss mask (assistant tokens only, tool results and user turns carry no loss), embedded
in templates/dpo_train.py.j2; rollouts.py builds pairs from a GRPO run's verified and failed rollouts
(`tunepack dpo pairs`, cli.py)."""

from __future__ import annotations

from typing import Any

from ...config import TrainConfig
from ...errors import DataError
from ...train.memory import Batch
from ...train.render import EMBEDDED
from ..base import Method


class Dpo(Method):
    name = "dpo"
    template = "dpo_train.py.j2"
    embedded = (*EMBEDDED, "methods/dpo/pairs.py")
    check_label = "the pairs' loss masks with the real tokenizer"

    def memory_batch(self, cfg: TrainConfig) -> Batch:
        """A pair is two sequences (prompt + chosen, prompt + rejected) in one forward pass."""
        return Batch(sequences=2 * cfg.training.per_device_train_batch_size, length=cfg.training.max_length)

    def check_rows(self, cfg: TrainConfig, rows: list[dict]) -> None:
        from .pairs import pair_problems

        bad = [(i, p) for i, row in enumerate(rows) for p in pair_problems(row)[:1]]
        if bad:
            shown = "; ".join(f"row {i}: {p}" for i, p in bad[:5]) + (" …" if len(bad) > 5 else "")
            raise DataError(f"{len(bad)} of {len(rows)} preference rows cannot train ({shown}).",
                            "give each row prompt, chosen and rejected as lists of messages ({role, content[, "
                            "tool_calls]}), the answers starting with the assistant's turn and differing, or build "
                            "them with `tunepack dpo pairs RUN_DIR -o pairs.jsonl`.")

    def rows_line(self, rows: int) -> str:
        return f"{rows} preference pairs (prompt, chosen, rejected)"

    def smoke(self, cfg: TrainConfig) -> dict[str, Any]:
        return {"training": {"method": "dpo"}, "grpo": cfg.grpo}

    def selection_metric(self, cfg: TrainConfig) -> str:
        """The held-out margin measured after training, else TRL's training margin."""
        return "eval/dpo/margin" if cfg.data.held_out else "rewards/margins"


DPO = Dpo()
