"""Plain chat rows (``data.format: messages``, the shape public tool-calling datasets have) are shaped for the
family's template in the training script, as converted sessions are on the host: Llama 3.x takes no text beside a
tool call and one call per message, Gemma 4 v5 wants the text before the calls in a message of its own. Rows no
rule changes stay as they are, a template tunepack does not know is probed and refused where it would lose the
text, and the held-out rows the eval kit re-reads and shapes alike are the ones the split recorded."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path

import pytest
from support.common import short_conversation, write_jsonl
from transformers import AutoTokenizer

from mcp_server.config import parse_config
from mcp_server.errors import TraceError
from mcp_server.evals.kit import heldout, shaping
from mcp_server.evals.kit.shaping import ShapingError, shape_rows, shaping_name, shaping_name_of
from mcp_server.resources import chat_templates
from mcp_server.traces.templates import flatten_tools, shape
from mcp_server.train import maskcheck as mc
from mcp_server.train.chat_templates import trl_templates
from mcp_server.methods import render_script
from mcp_server.train.render import EMBEDDED
from mcp_server.train.tiny_model import build_tiny_model

OURS = chat_templates()


def call(name: str, command: str, call_id: str | None = None) -> dict:
    return {"type": "function", **({"id": call_id} if call_id else {}),
            "function": {"name": name, "arguments": {"command": command}}}


def said_and_called(i: int) -> list[dict]:
    """The issue's row: the assistant says something and calls a tool in the same message (no ids, as public
    datasets often have)."""
    messages = short_conversation(i)
    messages[2]["content"] = f"Let me run the tests in pkg{i}."
    return messages


def two_calls(i: int) -> list[dict]:
    messages = short_conversation(i)
    messages[2]["tool_calls"] = [call("bash", f"pytest pkg{i}"), call("bash", f"ruff check pkg{i}")]
    return messages[:4] + [{"role": "tool", "name": "bash", "content": "lint clean"}] + messages[4:]


ROWS = ([{"messages": said_and_called(i)} for i in range(10)] + [{"messages": two_calls(i)} for i in range(10, 14)]
        + [{"messages": short_conversation(i)} for i in range(14, 20)])


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("shaping") / "rows.jsonl", ROWS)


@pytest.fixture(scope="module")
def replicas(rows_file) -> dict[str, Path]:
    return {arch: build_tiny_model([str(rows_file)], rows_file.parent / arch, arch=arch, vocab_size=1024)
            for arch in ("llama3", "gemma4")}


def config(model_dir: Path, rows: Path, **top):
    data_section = {"path": str(rows), **top.pop("data", {})}
    return parse_config({"model": {"name": str(model_dir)}, "data": data_section,
                         "training": {"max_length": 256, "max_steps": 2, "gradient_checkpointing": False},
                         "tracking": {"project": "shaping-tests", "run_name": "shaping"}, **top})


def script(model_dir: Path, rows: Path, **top) -> types.ModuleType:
    """The rendered training script as a module (its main() is not run)."""
    module = types.ModuleType("tunepack_train_under_test")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(render_script(config(model_dir, rows, **top)), "train.py", "exec"), module.__dict__)
    return module


def shaped_for(rows_file: Path, replicas: dict[str, Path], arch: str, train=None, **top):
    """(the script's shape_plain_rows result, the data section it filled in) for the rows file."""
    from datasets import load_dataset

    ns = script(replicas[arch], rows_file, **top)
    data = dict(ns.CONFIG["data"])
    train = load_dataset("json", data_files=str(rows_file), split="train") if train is None else train
    shaped, _ = ns.shape_plain_rows(data, train, None)
    return shaped, data, ns


# --- the failure, and the fix in the rendered script -----------------------------------------

def test_the_row_fails_the_mask_check_unshaped_because_llama_drops_the_text(replicas):
    """Before: the mask is right, the template drops the text — the mask check reported it as a wrong mask."""
    tokenizer = AutoTokenizer.from_pretrained(replicas["llama3"])
    with pytest.raises(mc.MaskCheckError, match="its text is missing from the rendered conversation"):
        mc.check_dataset(tokenizer, ROWS[:10], fmt="messages", chat_template=OURS["llama3_2"],
                         template_label="tunepack:llama3_2", max_length=1024)


def test_llama3_check_only_shapes_the_rows_counts_them_and_passes(tmp_path, replicas, rows_file):
    out = tmp_path / "train.py"
    out.write_text(render_script(config(replicas["llama3"], rows_file)), encoding="utf-8")
    done = subprocess.run([sys.executable, str(out), "--check-only"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    mask = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("TUNEPACK_MASK "))[14:])
    assert mask["problems"] == [] and mask["rows"] == len(ROWS)
    assert mask["shaping"] == {"template": "llama3_2", "rows_shaped": 14, "text_of_tool_turn_removed": 10,
                               "tool_calls_split": 4}
    assert "[tunepack] shaped 14 rows for llama3_2 (one tool call per message" in done.stdout


def test_gemma4_v5_rows_say_their_text_before_the_calls(rows_file, replicas):
    shaped, data, ns = shaped_for(rows_file, replicas, "gemma4")
    assert data["shaping"] == {"template": "gemma4_v5", "rows_shaped": 10, "text_before_calls_split": 10}
    tokenizer = AutoTokenizer.from_pretrained(replicas["gemma4"])
    row = mc.conversation(shaped[0], "messages")[0]
    text = tokenizer.apply_chat_template(row, chat_template=OURS["gemma4_v5"], tokenize=False)
    assert "<|turn>model\nLet me run the tests in pkg0.<|tool_call>call:bash" in text  # unshaped: after the result
    report = mc.check_dataset(tokenizer, shaped, fmt="messages", chat_template=OURS["gemma4_v5"],
                              template_label="tunepack:gemma4_v5", max_length=1024)
    assert report["problems"] == []


def test_earlier_gemma4_revision_removes_the_text_instead(rows_file, replicas):
    shaped, data, _ = shaped_for(rows_file, replicas, "gemma4", chat_template="tunepack:gemma4")
    assert data["shaping"] == {"template": "gemma4", "rows_shaped": 10, "text_of_tool_turn_removed": 10}
    assert shaped[0]["messages"][2]["content"] == "" and shaped[0]["messages"][2]["tool_calls"]


def test_rows_already_fine_are_left_alone(tmp_path, replicas):
    from datasets import load_dataset

    fine = write_jsonl(tmp_path / "fine.jsonl", [{"messages": short_conversation(i)} for i in range(4)])
    train = load_dataset("json", data_files=str(fine), split="train")
    shaped, data, _ = shaped_for(fine, replicas, "llama3", train)
    assert shaped is train and "shaping" not in data  # not even the tokenizer was needed
    once, _ = shape_rows(ROWS, "llama3_2")
    again, counts = shape_rows(once, "llama3_2")  # converted sessions arrive shaped already
    assert counts == {"rows_shaped": 0} and all(a is b for a, b in zip(again, once, strict=True))


def test_heldout_rows_shaped_by_the_eval_are_the_ones_the_split_recorded(rows_file, replicas):
    """The split runs on shaped rows (datasets' view, None-filled); the eval kit re-reads the file with json,
    shapes it the same way and finds every held-out group unchanged."""
    ns = script(replicas["llama3"], rows_file, data={"eval_fraction": 0.25})
    data = dict(ns.CONFIG["data"])
    train, held, record = ns.load_rows(data)
    assert record["rows"] == len(held) and len(train) + len(held) == len(ROWS)
    reread = [json.loads(line) for line in rows_file.read_text().splitlines()]
    picked = heldout.select(shape_rows(reread, data["shaping"]["template"])[0], record)
    assert sorted(map(heldout.row_sha256, picked)) == sorted(map(heldout.row_sha256, held))
    with pytest.raises(heldout.HeldoutError):  # unshaped, the reference would not be what was trained
        heldout.select(reread, record)


def test_unknown_template_that_drops_the_text_is_refused_naming_it(tmp_path, rows_file, replicas, capsys):
    edited = tmp_path / "llama-edited.jinja"
    edited.write_text("{#- my copy -#}\n" + OURS["llama3_2"], encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        shaped_for(rows_file, replicas, "llama3", chat_template=str(edited))
    assert exit_.value.code == 3
    error = json.loads(next(line for line in capsys.readouterr().out.splitlines()
                            if line.startswith("TUNEPACK_ERROR "))[15:])
    assert "drops the text of an assistant message that also calls a tool, and 10 rows hold" in error["problem"]
    assert "; it cannot render an assistant message with several tool calls (TemplateError" in error["problem"]
    assert "tunepack:llama3_2" in error["fix"] and "assistant message of its own" in error["fix"]


# --- the stdlib module -----------------------------------------------------------------------------

def test_llama_split_pairs_results_by_id_else_in_order():
    by_id = [{"role": "user", "content": "go"},
             {"role": "assistant", "content": "", "reasoning_content": "plan",
              "tool_calls": [call("f", "a", "A"), call("f", "b", "B")]},
             {"role": "tool", "tool_call_id": "B", "content": "rb"},
             {"role": "tool", "tool_call_id": "A", "content": "ra"}]
    counts: Counter = Counter()
    out = shaping.shape_messages(by_id, "llama3_1", counts)
    assert [m.get("content") for m in out[1:]] == ["", "ra", "", "rb"]
    assert counts == {"tool_calls_split": 1, "reasoning_not_rendered": 1} and "reasoning_content" in by_id[1]
    in_order = shaping.shape_messages(two_calls(1), "llama3_2", Counter())
    assert [m.get("content") for m in in_order[2:6]] == ["", "2 passed", "", "lint clean"]


def test_calls_without_ids_and_too_few_results_cannot_be_split_faithfully():
    messages = two_calls(1)
    del messages[4]  # one result for two calls, no ids to pair them
    with pytest.raises(ShapingError, match="^Row 1: An assistant message makes 2 tool calls and 1 tool results"):
        shape_rows([{"messages": short_conversation(0)}, {"messages": messages}], "tunepack:llama3_2")
    with pytest.raises(TraceError) as err:  # the converter's wrapper speaks its own error
        shape(messages, "gptoss", Counter())
    assert "tool_call_id" in err.value.fix


def test_other_templates_rules_and_json_string_rows():
    reasoning = [{"role": "user", "content": "go"},
                 {"role": "assistant", "content": "Look.", "reasoning_content": "r1", "tool_calls": [call("f", "x")]},
                 {"role": "tool", "content": "done"},
                 {"role": "assistant", "content": "Again.", "tool_calls": [call("f", "y")]},
                 {"role": "tool", "content": "done"}, {"role": "assistant", "content": "Ok."}]
    rows = [{"messages": json.dumps(reasoning), "id": 7}]
    (deepseek,), counts = shape_rows(rows, "trl:deepseekv3")
    assert counts == {"rows_shaped": 1, "reasoning_not_rendered": 1, "text_of_later_tool_turn_removed": 1}
    messages = json.loads(deepseek["messages"])
    assert deepseek["id"] == 7 and [m["content"] for m in messages[1::2]] == ["Look.", "", "Ok."]
    (gptoss,), counts = shape_rows([{"messages": reasoning}], "gptoss")
    assert gptoss["messages"][1]["thinking"] == "r1\n\nLook." and counts["reasoning_as_thinking"] == 2
    assert shape_rows([{"messages": reasoning}], "qwen3")[1] == {"rows_shaped": 0}
    assert shape_rows([{"messages": reasoning}], "qwen2_5")[1] == {"rows_shaped": 1, "reasoning_not_rendered": 1}
    assert flatten_tools(reasoning)[1]["content"].startswith("Look.\n<tool_call>\n")


def test_template_names_and_texts():
    assert shaping_name("tunepack:gemma4_v5") == "gemma4_v5" and shaping_name(None) is None
    with pytest.raises(ShapingError, match="'mistral'"):
        shaping_name("mistral")
    trl = trl_templates()
    assert shaping_name_of(OURS["llama3_2"], OURS, trl) == "llama3_2"
    assert shaping_name_of(trl["qwen3_training"], OURS, trl) == "qwen3"
    assert shaping_name_of("{#- edited -#}" + OURS["llama3_2"], OURS, trl) is None
    assert shaping_name_of(trl["llama3_training"], OURS, trl) is None  # drops tool calls: no rules to shape by
    line = shaping.shaping_line("llama3_2", {"rows_shaped": 2, "text_of_tool_turn_removed": 2, "tool_calls_split": 0})
    assert line.startswith("shaped 2 rows for llama3_2 (") and line.endswith(": text_of_tool_turn_removed 2")


def test_the_module_is_stdlib_only_and_its_names_are_its_own_in_the_script():
    source = Path(shaping.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {name.split(".")[0] for name in imported} <= set(sys.stdlib_module_names)
    root = Path(shaping.__file__).parents[2]
    own = {n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    others = {n.name for m in EMBEDDED if m != "evals/kit/shaping.py"
              for n in ast.parse((root / m).read_text(encoding="utf-8")).body
              if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert "evals/kit/shaping.py" in EMBEDDED and not own & others
