"""The fast next-action scorer (evals/kit/turndecode.py through run_model) writes, turn by turn, what the plain one
writes (every prompt from scratch in padded generate batches), for each family's replica, on tutorial-shaped Pi
sessions whose turns do not always extend the turn before (Gemma 4 stops rendering reasoning past a user message;
a context cut to max_length starts later): where a prompt is not a prefix of the next, the cache is cut back, never
assumed. A turn may only differ at a near tie (top-2 logit margin under 1e-3), and is listed with its margin."""

from __future__ import annotations

import json

import pytest

from support.scoring import compare
from support.tutorial import write_agent_sessions

# family replica -> the shaping its rows get (what `tunepack run` does for its template)
FAMILIES = {"gemma4": "tunepack:gemma4_v5", "qwen3": None, "llama3": "tunepack:llama3_2"}
PARSER = {"gemma4": "gemma4", "qwen3": "hermes", "llama3": "llama3"}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("turndecode")
    return folder, write_agent_sessions(folder / "sessions", 8)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_fast_scorer_writes_the_plain_scorers_turns(sessions, family):
    from mcp_server.evals.kit.generate import load_generator
    from mcp_server.evals.kit.heldout import split
    from mcp_server.evals.kit.nextaction import next_action_items, run_model
    from mcp_server.traces import ConvertOptions, convert
    from mcp_server.train.tiny_model import build_tiny_model

    folder, source = sessions
    rows_path = folder / f"{family}.jsonl"
    convert([str(source)], rows_path, ConvertOptions(template=FAMILIES[family]))
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    _, _, record = split(rows, 0.5, seed=0)
    turns, _ = next_action_items(rows, record)
    turns = turns[:20]
    model = build_tiny_model([str(rows_path)], folder / f"tiny-{family}", arch=family, vocab_size=1024)
    gen = load_generator({"label": "base", "base": str(model)}, backend="hf")
    # 640 tokens: the later turns' contexts are cut (and the cut kept while it fits); 3 lanes: batches refill often
    fast = run_model(gen, turns, PARSER[family], 40, 640, None, batch_size=3, engine="fast")
    plain = run_model(gen, turns, PARSER[family], 40, 640, None, batch_size=3, engine="plain")
    assert fast["contexts"] == plain["contexts"]
    decode = fast["decode"]
    assert decode["turns"] == len(turns) and decode["reused_tokens"] > 0.4 * decode["prompt_tokens"]
    assert decode["trunk_dropped"] > 0  # some prompt did not extend the one before: the cache was cut back
    margins, parted = compare(gen, turns, fast, plain)
    print(f"\n{family}: {len(turns)} turns, {decode}; differ: {parted}")
    assert all(m is not None and m < 1e-3 for *_, m in parted), parted
    assert len(parted) <= 1


def test_a_prompt_that_is_not_a_prefix_cuts_the_cache_back(tmp_path):
    """Three turns of one session: the second extends the first, the third does not (its middle changed): the
    decoder reuses what is shared, recomputes the rest, and each answer is the one generate gives alone."""
    import torch
    from transformers import AutoModelForCausalLM

    from mcp_server.evals.kit.turndecode import TurnDecoder
    from mcp_server.train.tiny_model import build_tiny_model
    from support.common import short_conversation, write_jsonl

    data = write_jsonl(tmp_path / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(8)])
    model = AutoModelForCausalLM.from_pretrained(build_tiny_model([str(data)], tmp_path / "m", arch="qwen3",
                                                                  vocab_size=512)).eval()
    base = list(range(40, 90))
    prompts = [base, base + list(range(90, 110)), base[:20] + list(range(120, 150))]
    decoder = TurnDecoder(model, lanes=2)
    out = decoder.run([prompts], [[12, 12, 12]], stop_ids=set())
    for prompt, answer in zip(prompts, out[0], strict=True):
        ids = torch.tensor([prompt])
        alone = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False,
                               eos_token_id=None, pad_token_id=0)[0, len(prompt):].tolist()
        assert answer == alone
    assert decoder.stats["reused_tokens"] == 50 + 20 and decoder.stats["trunk_dropped"] == 70 - 20
    assert decoder.stats["prompt_tokens"] == 50 + 70 + 50
