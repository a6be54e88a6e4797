"""Whole model turns: no training window, turn row or next-action turn begins or ends inside a model turn.

Gemma 4's shaping writes one model turn ("Let me read the files:" then a call) as two assistant messages, the text
piece and the call piece, which its template renders as one turn. A window that ended on the text piece taught the
model to close its turn right after announcing a call; one that started at the call piece rendered a prompt that
is not a prefix of prompt + completion (TRL then drops the difference and warns). Checked on the shared Pi sessions
(the seed's data) shaped for each family's training template and tokenized by that family's replica, against the
session each row came from, and with TRL's own prefix rule; a small hand-made session when ../shared is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.common import SHARED, write_jsonl
from mcp_server.evals.kit.nextaction import fit_context, row_turns
from mcp_server.resources import chat_templates
from mcp_server.train import maskcheck as mc
from mcp_server.train.windows import split_units, window_rows

PI = SHARED / "data" / "traces" / "pi"
FIXTURE_PI = Path(__file__).parent / "fixtures" / "traces" / "pi"
# family replica → (the shaping the converter applies, the training template the run renders with)
FAMILIES = {"gemma4": ("tunepack:gemma4_v5", "gemma4_v5"), "qwen3": (None, None), "llama3": ("tunepack:llama3_2", "llama3_2")}
MAX_LENGTH = 1024  # short windows: many boundaries on these sessions
KEEP = 400  # messages kept of each session (the two long ones have 1,053 and 377): CI's time, hundreds of windows


def first_messages(row: dict, count: int) -> dict:
    """The row's first ``count`` messages, cut after a whole model turn (and its tool results) like a live session."""
    messages = row["messages"]
    while count < len(messages) and (messages[count]["role"] == "tool" or messages[count - 1]["role"] == "assistant"
                                     == messages[count]["role"]):
        count += 1
    return {**row, "messages": messages[:count]}


def text_piece(m: dict) -> bool:
    return m.get("role") == "assistant" and not m.get("tool_calls")


def call_piece(m: dict) -> bool:
    return m.get("role") == "assistant" and bool(m.get("tool_calls"))


# --- the rule, on hand-made sessions ----------------------------------------------------------------------

def split_session(turns: int) -> list[dict]:
    """Gemma 4's shape: every tool-calling turn is a text piece then a call piece; reasoning on the text piece."""
    messages = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix it."}]
    for t in range(turns):
        messages.append({"role": "assistant", "content": f"Step {t}: let me look at m{t}.py:",
                         "reasoning_content": f"module {t} next"})
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{t}", "type": "function", "function": {"name": "bash", "arguments": {"command": f"cat m{t}.py"}}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{t}", "name": "bash", "content": f"line {t} " * 30})
        if t % 3 == 2:
            messages.append({"role": "user", "content": "Go on."})
    messages.append({"role": "assistant", "content": "Done."})
    return messages


def chars(messages, tools) -> int:
    return len(json.dumps(messages)) // 4


def test_a_text_piece_and_its_call_piece_are_one_unit():
    messages = split_session(2)
    head, units = split_units(messages)
    assert head == 2
    start, model_end, end, is_assistant = units[0]
    assert (start, model_end, end, is_assistant) == (2, 4, 5, True)  # text piece, call piece, then the result
    assert [m["role"] for m in messages[start:end]] == ["assistant", "assistant", "tool"]


@pytest.mark.parametrize("max_length", [150, 260, 600])
def test_windows_never_split_a_model_turn_and_never_cross_a_user_message_after_reasoning(max_length):
    messages = split_session(9)
    out, stats = window_rows([(messages, [], {})], chars, max_length, keep_turns=True)
    assert stats["windowed"] == 1 and len(out) > 3
    for row in out:
        prompt, completion = row["prompt"], row["completion"]
        assert prompt[-1]["role"] != "assistant", "a window starts at a call piece"
        last = max(row["trained_turns"])
        assert not (text_piece(messages[last]) and last + 1 < len(messages) and call_piece(messages[last + 1])), \
            "a window ends on a text piece its session continues with a call"
        if any(m.get("reasoning_content") for m in prompt[next(i for i in range(len(prompt) - 1, -1, -1)
                                                           if prompt[i]["role"] == "user"):]):
            assert not any(m["role"] == "user" for m in completion), "the prompt's reasoning would not render"
    trained = sorted(t for row in out for t in row["trained_turns"])
    assert trained == sorted(set(trained))  # every turn at most once
    assert len(trained) + sum(stats["turns_dropped"].values()) == stats["assistant_turns"]


def test_next_action_turns_are_model_turns_and_contexts_drop_whole_turns():
    messages = split_session(3)
    turns = row_turns({"messages": messages}, "s")
    assert [t.index for t in turns] == [2, 5, 8, 12]  # each turn starts at its text piece
    first = turns[0]
    assert first.answer == "Step 0: let me look at m0.py:" and [c.name for c in first.reference] == ["bash"]
    assert turns[-1].reference == [] and turns[-1].answer == "Done."
    context = turns[-1].context
    kept = fit_context(context, lambda c: len(c) <= 6)
    assert kept[2]["role"] == "assistant" and kept[2].get("content") and not kept[2].get("tool_calls")  # a text piece
    assert all(m["role"] != "tool" for m in kept[2:3])


# --- the shared Pi sessions, each family's replica ------------------------------------------------------------

@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """{family: (converted rows shaped for it, tokenizer, training template)}."""
    from transformers import AutoTokenizer

    from mcp_server.traces import ConvertOptions, convert
    from mcp_server.train.tiny_model import build_tiny_model

    source, where = (PI, "shared") if PI.is_dir() else (FIXTURE_PI, "fixtures")
    folder = tmp_path_factory.mktemp("model-turns")
    out = {}
    for family, (shaping, name) in FAMILIES.items():
        path = folder / f"{family}.jsonl"
        convert([str(source)], path, ConvertOptions(template=shaping))
        rows = [first_messages(json.loads(line), KEEP) for line in path.read_text().splitlines()]
        replica = build_tiny_model([str(write_jsonl(folder / f"{family}-text.jsonl", rows))], folder / family,
                                   arch=family, vocab_size=2048)
        tokenizer = AutoTokenizer.from_pretrained(replica)
        template = chat_templates()[name] if name else mc.resolve_chat_template(
            tokenizer, "model", "messages", family, packaged=chat_templates())[0]
        out[family] = (rows, tokenizer, template)
    out["where"] = where
    return out


def ids(tokenizer, template, messages, tools, generation_prompt=False) -> list[int]:
    return list(tokenizer.apply_chat_template(messages, tools=tools or None, chat_template=template, tokenize=True,
                                              add_generation_prompt=generation_prompt, return_dict=True)["input_ids"])


@pytest.mark.parametrize("family", list(FAMILIES))
def test_windows_of_the_pi_sessions_end_on_whole_turns_and_pass_trls_prefix_check(sessions, family):
    rows, tokenizer, template = sessions[family]

    def count(messages, tools):
        return len(ids(tokenizer, template, messages, tools))

    convs = [mc.conversation(r, "messages") for r in rows]
    out, stats = window_rows([(m, t, {"conv": i}) for i, (m, t, _) in enumerate(convs)], count, MAX_LENGTH,
                             keep_turns=True)
    assert stats["windowed"] >= (2 if sessions["where"] == "shared" else 0)
    ends_on_text = starts_at_call = not_prefix = 0
    for row in out:
        messages = convs[row["conv"]][0]
        last = max(row["trained_turns"])
        ends_on_text += text_piece(messages[last]) and last + 1 < len(messages) and call_piece(messages[last + 1])
        starts_at_call += row["prompt"][-1]["role"] == "assistant"
        prompt = ids(tokenizer, template, row["prompt"], row["tools"], generation_prompt=True)
        whole = ids(tokenizer, template, row["prompt"] + row["completion"], row["tools"])
        not_prefix += whole[:len(prompt)] != prompt
    assert (ends_on_text, starts_at_call, not_prefix) == (0, 0, 0), f"{len(out)} windows"
    report = mc.check_dataset(tokenizer, out, fmt="prompt_completion", chat_template=template, template_label=family,
                              max_length=MAX_LENGTH, sample=64)  # token by token on a sample: the rule is above
    assert report["problems"] == []
    print(f"\n{family}: {len(out)} windows at {MAX_LENGTH} tokens, {json.dumps(stats)}")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_next_action_turns_of_the_pi_sessions_are_whole_model_turns(sessions, family):
    rows, tokenizer, template = sessions[family]

    def fits(context, tools):
        return len(ids(tokenizer, template, context, tools, generation_prompt=True)) + 64 <= MAX_LENGTH

    checked = 0
    for row in rows:
        messages = [m for m in mc.conversation(row, "messages")[0]]
        for turn in row_turns(row, "s")[:15]:  # the first turns of each session: contexts grow with the session
            end = turn.index
            while end < len(messages) and messages[end]["role"] == "assistant":
                end += 1
            assert not call_piece(messages[turn.index]) or turn.index == 0 or messages[turn.index - 1]["role"] != "assistant"
            assert end == len(messages) or messages[end]["role"] != "assistant"
            context = fit_context(turn.context, lambda c, t=turn.tools: fits(c, t))
            assert context[-1]["role"] != "assistant", "the context ends on the model's own text piece"
            prompt = ids(tokenizer, template, context, turn.tools, generation_prompt=True)
            whole = ids(tokenizer, template, context + messages[turn.index:end], turn.tools)
            assert whole[:len(prompt)] == prompt, f"turn {turn.index}: the prompt is not a prefix of prompt + turn"
            checked += 1
    assert checked >= (45 if sessions["where"] == "shared" else 5)


def test_the_mask_check_refuses_a_row_cut_between_the_text_piece_and_the_call_piece(sessions):
    _, tokenizer, template = sessions["gemma4"]
    messages = split_session(1)
    whole = {"prompt": messages[:2], "completion": messages[2:4]}
    cut = {"prompt": messages[:3], "completion": messages[3:4]}  # the prompt ends on the text piece
    assert mc.check_dataset(tokenizer, [whole], fmt="prompt_completion", chat_template=template, template_label="g",
                            max_length=4096)["problems"] == []
    with pytest.raises(mc.MaskCheckError) as caught:
        mc.check_dataset(tokenizer, [cut], fmt="prompt_completion", chat_template=template, template_label="g",
                         max_length=4096)
    assert "the prompt rendered alone ends in '<turn|>\\n<|turn>model\\n'" in caught.value.problem
    assert "cut rows between model turns" in caught.value.fix
