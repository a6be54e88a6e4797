"""SFT, the first rung: TRL's SFTTrainer on chat rows (loss on assistant tokens, verified token by token), from the
base model or from a registered adapter trained further (model.adapter). Its script is templates/sft_train.py.j2;
every default of ``Method`` is SFT's."""

from __future__ import annotations

from .base import Method

SFT = Method()
