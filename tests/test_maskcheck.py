"""The mask check against a real tokenizer and real TRL chat templates."""

from pathlib import Path

import pytest
import trl

from support.common import TOOLS, short_conversation
from mcp_server.train import maskcheck as mc

TRL_TEMPLATES = Path(trl.__file__).parent / "chat_templates"


def trl_template(name: str) -> str:
    return (TRL_TEMPLATES / f"{name}_training.jinja").read_text()


QWEN3 = trl_template("qwen3")  # the tiny model carries Qwen3's stock template; this is its training variant


def rows(n=8, tools=False):
    return [{"messages": short_conversation(i), **({"tools": TOOLS} if tools else {})} for i in range(n)]


def check(tok, data, template=None, **kw):
    kw.setdefault("max_length", 512)
    return mc.check_dataset(tok, data, fmt="messages", chat_template=template or QWEN3,
                            template_label="test", **kw)


def test_good_data_passes_and_reports(tiny_tokenizer):
    report = check(tiny_tokenizer, rows(8, tools=True))
    assert report["rows_checked"] == 8 and report["problems"] == []
    assert 0 < report["trained_token_share"] < 0.6
    assert report["rows_truncated"] == report["rows_dropped"] == 0
    assert report["longest_row_tokens"] > 0


def test_trained_spans_are_exactly_the_assistant_turns(tiny_tokenizer):
    messages = short_conversation(3)
    ids, mask, text, offsets = mc.tokenize_row(tiny_tokenizer, messages, None, QWEN3)
    spans, current = [], []
    for token, m in zip(ids, mask):
        if m:
            current.append(token)
        elif current:
            spans.append(tiny_tokenizer.decode(current))
            current = []
    if current:
        spans.append(tiny_tokenizer.decode(current))
    assert len(spans) == 2
    assert '"name": "bash"' in spans[0] and '"command": "pytest pkg3"' in spans[0]
    assert spans[0].rstrip().endswith("<|im_end|>")
    assert "All 4 tests in pkg3 pass." in spans[1] and spans[1].rstrip().endswith("<|im_end|>")
    trained_text = "".join(spans)
    for untrained in ("You are a coding agent.", "Run the tests in pkg3.", "4 passed", "<|im_start|>user"):
        assert untrained not in trained_text


def test_template_that_drops_tool_calls_names_templates_that_keep_them(tiny_tokenizer):
    with pytest.raises(mc.MaskCheckError) as err:
        check(tiny_tokenizer, rows(4), template=trl_template("llama3"))
    text = str(err.value)
    assert "drops assistant tool calls" in text
    for keeper in ("trl:qwen3", "trl:qwen2_5", "trl:gptoss", "trl:deepseekv3"):
        assert keeper in text


def test_phi3_training_template_drops_tool_calls_too(tiny_tokenizer):
    assert "assistant tool calls" in mc.probe_tool_drops(tiny_tokenizer, trl_template("phi3"))


@pytest.mark.parametrize("name", [t[4:] for t in mc.TOOL_KEEPING_TEMPLATES if t.startswith("trl:")])
def test_named_keepers_really_keep_tool_calls(tiny_tokenizer, name):
    assert mc.probe_tool_drops(tiny_tokenizer, trl_template(name)) == []


PLAIN_CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}"
    "{% if m.role == 'assistant' %}{% generation %}{{ m.content + '<|im_end|>' }}{% endgeneration %}"
    "{% else %}{{ m.content + '<|im_end|>' }}{% endif %}{{ '\\n' }}{% endfor %}"
)
PLAIN_ROWS = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]}]


def test_template_without_tool_support_is_fine_for_plain_chats(tiny_tokenizer):
    assert check(tiny_tokenizer, PLAIN_ROWS, template=PLAIN_CHATML)["problems"] == []
    with pytest.raises(mc.MaskCheckError, match="drops assistant tool calls"):
        check(tiny_tokenizer, rows(2), template=PLAIN_CHATML)


def test_end_marker_that_is_not_a_token_of_the_tokenizer_fails(tiny_tokenizer):
    # llama3's <|eot_id|> is not in this tokenizer's vocabulary: it splits into pieces, so no
    # end-of-turn token follows the answer and the model would never learn to stop.
    with pytest.raises(mc.MaskCheckError, match="no end-of-turn token follows it"):
        check(tiny_tokenizer, PLAIN_ROWS, template=trl_template("llama3"))


def test_truncation_fails_with_counts_unless_allowed(tiny_tokenizer):
    data = rows(6)
    longest = check(tiny_tokenizer, data)["longest_row_tokens"]
    with pytest.raises(mc.MaskCheckError) as err:
        check(tiny_tokenizer, data, max_length=longest - 3)
    assert "rows would be truncated" in str(err.value) and f"at least {longest}" in str(err.value)
    with pytest.raises(mc.MaskCheckError, match=r"0 rows would be truncated and 6 silently dropped"):
        check(tiny_tokenizer, data, max_length=20)
    report = check(tiny_tokenizer, data, max_length=20, allow_truncation=True)
    assert report["rows_dropped"] == 6


def test_end_of_turn_outside_the_mask_fails(tiny_tokenizer):
    template = QWEN3
    broken = template.replace("{{- '<|im_end|>\\n' }}\n        {%- endgeneration %}",
                              "{%- endgeneration %}\n        {{- '<|im_end|>\\n' }}")
    assert broken != template
    with pytest.raises(mc.MaskCheckError, match="end-of-turn token is not trained"):
        check(tiny_tokenizer, rows(2), template=broken)


def test_training_on_user_and_tool_tokens_fails(tiny_tokenizer):
    template = QWEN3
    everything = "{% generation %}" + template.replace("{%- generation %}", "").replace(
        "{%- endgeneration %}", "") + "{% endgeneration %}"
    with pytest.raises(mc.MaskCheckError) as err:
        check(tiny_tokenizer, rows(2), template=everything)
    text = str(err.value)
    assert "(system): system tokens are trained" in text and "(user): user tokens are trained" in text


def test_template_without_generation_markers(tiny_tokenizer):
    plain = (TRL_TEMPLATES / "qwen3.jinja").read_text()
    with pytest.raises(mc.MaskCheckError, match="no \\{% generation %\\} markers"):
        check(tiny_tokenizer, rows(2), template=plain)


def test_rows_without_assistant_are_reported_by_index(tiny_tokenizer):
    data = rows(5)
    data[1] = {"messages": [{"role": "user", "content": "hello?"}]}
    data[3] = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "  "}]}
    assert mc.rows_without_assistant(data, "messages") == [1, 3]
    with pytest.raises(mc.MaskCheckError, match=r"2 of 5 rows .*row indices: 1, 3"):
        check(tiny_tokenizer, data)


def test_empty_dataset(tiny_tokenizer):
    with pytest.raises(mc.MaskCheckError, match="no rows"):
        check(tiny_tokenizer, [])


def test_detect_format():
    assert mc.detect_format(["messages", "tools"]) == "messages"
    assert mc.detect_format(["prompt", "completion"]) == "prompt_completion"
    with pytest.raises(mc.MaskCheckError, match="neither a 'messages' column"):
        mc.detect_format(["text"])


def test_prompt_completion_rows_train_only_the_completion(tiny_tokenizer):
    data = [{"prompt": [{"role": "user", "content": f"Run the tests in pkg{i}."}],
             "completion": [{"role": "assistant", "content": f"All tests in pkg{i} pass."}]} for i in range(3)]
    report = mc.check_dataset(tiny_tokenizer, data, fmt="prompt_completion", chat_template=QWEN3,
                              template_label="test", max_length=512)
    assert report["problems"] == [] and report["trained_tokens"] > 0


def test_string_arguments_and_arrow_nulls_are_normalised():
    row = {"messages": [
        {"role": "user", "content": "x", "tool_calls": None},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "bash", "arguments": '{"command": "ls", "path": null}'}}]}]}
    messages, _, _ = mc.conversation(row, "messages")
    assert "tool_calls" not in messages[0]
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == {"command": "ls"}


def test_preview_marks_trained_spans(tiny_tokenizer):
    text = mc.preview(tiny_tokenizer, short_conversation(1), None, QWEN3)
    assert text.count("⟦") == 2 and "⟦" not in text.split("Run the tests in pkg1.")[0]
