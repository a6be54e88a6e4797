"""How long an eval will take, before it starts: per task, items × models × new tokens at a generation rate for
the machine, every answer assumed to run to ``max_tokens`` (an upper bound: most answers stop sooner).

    times = eval_times(cfg.eval, flavor="local", tiny=True, nextaction_turns=120)
    total, warning = against_timeout(times, timeout_s=3600)

The rates are rough figures of answers decoded in the kit's batches of 16 with transformers, per answer: a tiny
CPU replica (bench/nextaction: ~370 tokens/s on 2 cores, batched), a real small model (0.5-4 B) on CPU, and each
GPU family (one stream's rate × 8: a batch of 16 costs a GPU little more per step than one answer).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..config.eval_section import EvalSection

ITEMS = {"humaneval": 164, "mbpp": 500, "mbpp-agent": 500}  # test-split sizes
BFCL_ITEMS = 200  # per category, about
AGENT_STEPS = 4  # mbpp-agent: model turns per problem, about
TINY_CPU, MODEL_CPU = 350.0, 6.0  # new tokens a second
GPU = {"t4": 25.0, "l4": 35.0, "a10g": 40.0, "l40s": 50.0, "a100": 60.0, "h100": 80.0, "h200": 80.0}
BATCH_GAIN = 8.0  # GPU: answers decoded together, at about one stream's speed each (of the kit's batch of 16)
SETUP_S = {"cpu": 60.0, "gpu": 300.0}  # load the model(s); on HF Jobs also the image and the weights


class EvalTime(BaseModel):
    task: str
    items: int = Field(description="Problems (or held-out model turns) scored.")
    models: int = Field(description="Models scored on each item: base and base + adapter (+ references).")
    expected_s: float = Field(description="Upper bound: every answer runs to max_tokens.")


def rate(flavor: str | None, tiny: bool) -> tuple[float, str]:
    name = (flavor or "local").lower()
    family = next((k for k in GPU if name.startswith(k)), None)
    if family:
        return GPU[family] * BATCH_GAIN, f"{family} GPU"
    return (TINY_CPU, "tiny replica on CPU") if tiny else (MODEL_CPU, "CPU")


def eval_times(ev: EvalSection, *, flavor: str | None, tiny: bool, nextaction_turns: int | None = None,
               heldout_sessions: int | None = None, models: int = 2) -> list[EvalTime]:
    tokens_per_s, _ = rate(flavor, tiny)
    per_answer = ev.max_tokens / tokens_per_s
    out = []
    for task in ev.tasks:
        if task == "next-action":
            turns = nextaction_turns or 0
            if ev.limit and heldout_sessions:  # the first N held-out sessions: their share of the turns
                turns = round(turns * min(ev.limit, heldout_sessions) / heldout_sessions)
            items, answers = turns, turns
        elif task.startswith("bfcl:"):
            items = min(ev.limit or BFCL_ITEMS, BFCL_ITEMS)
            answers = items
        else:
            total = ITEMS.get(task, ev.limit or 100)  # a .jsonl of the user's: its size is read by the job
            items = len(ev.ids) if ev.ids else min(ev.limit or total, total)
            answers = items * ev.samples * (AGENT_STEPS if task == "mbpp-agent" else 1)
        out.append(EvalTime(task=task, items=items, models=models, expected_s=round(answers * models * per_answer, 1)))
    return out


def against_timeout(times: list[EvalTime], timeout_s: float | None, flavor: str | None = None,
                    tiny: bool = False) -> tuple[float, tuple[str, str] | None]:
    """(expected seconds with set-up, (problem, fix) when that passes ``timeout_s``)."""
    _, where = rate(flavor, tiny)
    total = sum(t.expected_s for t in times) + SETUP_S["gpu" if "GPU" in where else "cpu"] if times else 0.0
    if not times or not timeout_s or total <= timeout_s:
        return total, None
    slow = max(times, key=lambda t: t.expected_s)
    return total, (f"the eval may take up to {total / 60:.0f} min on {where} ({slow.task}: {slow.items} items × "
                   f"{slow.models} models, about {slow.expected_s / 60:.0f} min), over its {timeout_s / 60:.0f}-minute "
                   "timeout", "set eval.limit (next-action: the first N held-out sessions), a smaller eval.max_tokens, "
                   "or a longer timeout")


def times_line(times: list[EvalTime], total: float) -> str:
    parts = ", ".join(f"{t.task} {t.items} items ≤ {t.expected_s / 60:.1f} min" for t in times)
    return f"eval: {parts}; ≤ {total / 60:.1f} min in all with loading (every answer at max_tokens)"
