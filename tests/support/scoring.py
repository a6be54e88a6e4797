"""The fast next-action scorer against the plain one, turn by turn (tests/test_turndecode.py, test_nextaction_e2e.py):
where two answers part, the top-2 logit margin of the plain answer's token there, teacher-forced."""

from __future__ import annotations


def token_margins(gen, context: list[dict], tools, answer: str) -> tuple[list[int], list[float]]:
    """(the answer's token ids, the top-2 logit margin at each of them) with the answer teacher-forced."""
    import torch

    prompt = gen.tokenizer(gen.prompt(context, tools), add_special_tokens=False)["input_ids"]
    said = gen.tokenizer(answer, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = gen.engine(input_ids=torch.tensor([prompt + said])).logits[0, len(prompt) - 1:-1].float()
    top = logits.topk(2, dim=-1).values
    return said, (top[:, 0] - top[:, 1]).tolist()


def compare(gen, turns, fast: dict, plain: dict) -> tuple[list[float], list[tuple]]:
    """(every margin along the plain answers, the turns that differ as (index, session, turn, token, margin))."""
    margins, parted = [], []
    for index, (turn, a, b) in enumerate(zip(turns, fast["outputs"], plain["outputs"], strict=True)):
        said, turn_margins = token_margins(gen, plain["contexts"][index], turn.tools, b)
        margins += turn_margins
        if a != b:
            theirs = gen.tokenizer(a, add_special_tokens=False)["input_ids"]
            at = next((i for i, (x, y) in enumerate(zip(theirs, said)) if x != y), min(len(theirs), len(said)))
            parted.append((index, turn.session, turn.index, at, turn_margins[at] if at < len(turn_margins) else None))
    return margins, parted
