"""Packing is only fast if it is right: a packed, padding-free batch must give every row the logits and the
per-token losses it gets alone — no attention and no loss across a packed boundary — for each replica family
and each attention implementation the script may run on CPU; and the script's own checks (the isolation proof
at start, the mask check on collated packed batches) catch the cases where it is not."""

from __future__ import annotations

import importlib.util
import sys
import types

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

from support.common import short_conversation
from mcp_server.config import parse_config
from mcp_server.resources import chat_templates
from mcp_server.train import maskcheck as mc
from mcp_server.methods import write_script
from mcp_server.train.tiny_model import build_tiny_model

TOLERANCE = 1e-4  # float32 on CPU: the same arithmetic up to summation order


@pytest.fixture(scope="module")
def replicas(tmp_path_factory, short_data):
    folder = tmp_path_factory.mktemp("packing")
    return {f: build_tiny_model([str(short_data)], folder / f, arch=f, vocab_size=1024) for f in ("qwen3", "llama3", "gemma4")}


def rows_for(model_dir):
    """Three rows of different lengths as (input_ids, labels), labels from the checked assistant mask."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    template, _ = mc.resolve_chat_template(tokenizer, "model", "messages", "replica", packaged=chat_templates())
    out = []
    for i, cut in ((1, 5), (2, 3), (3, 5)):
        ids, mask, _, _ = mc.tokenize_row(tokenizer, short_conversation(i)[:cut], None, template)
        out.append((ids, [t if m else -100 for t, m in zip(ids, mask)]))
    return out


def load(model_dir, attention, use_cache=False):
    """The model as the script loads it: Gemma 4's wrapper keeps its default for sdpa (its language model then
    runs sdpa; its audio tower has none and stays eager)."""
    gemma = "gemma4" in str(model_dir)
    kwargs = {} if (gemma and attention == "sdpa") else {"attn_implementation": attention}
    model = AutoModelForCausalLM.from_pretrained(model_dir, **kwargs).eval()
    text = getattr(model.config, "text_config", model.config)
    assert text._attn_implementation == attention
    for section in (model.config, getattr(model.config, "text_config", None)):
        if section is not None and hasattr(section, "use_cache"):
            section.use_cache = use_cache  # what the script does before training
    return model


def token_losses(logits, labels):
    """Per-position loss of predicting the next token (-100 labels masked), the way the Trainer shifts."""
    shifted = labels[1:]
    losses = torch.nn.functional.cross_entropy(logits[:-1].float(), shifted.clamp(min=0), reduction="none")
    return torch.where(shifted == -100, torch.zeros_like(losses), losses), shifted != -100


@pytest.mark.parametrize("family", ["qwen3", "llama3", "gemma4"])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_a_packed_batch_equals_its_rows_run_one_by_one(replicas, family, attention):
    rows = rows_for(replicas[family])
    model = load(replicas[family], attention)
    batch = DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)(
        [{"input_ids": ids, "labels": labels} for ids, labels in rows])
    with torch.no_grad():
        packed = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"]).logits[0]
    start = 0
    for ids, labels in rows:
        with torch.no_grad():
            alone = model(input_ids=torch.tensor([ids])).logits[0]
        end = start + len(ids)
        assert (packed[start:end] - alone).abs().max().item() < TOLERANCE
        packed_loss, packed_keep = token_losses(packed[start:end], batch["labels"][0, start:end])
        alone_loss, _ = token_losses(alone, torch.tensor(labels))
        assert torch.allclose(packed_loss, alone_loss, atol=TOLERANCE)
        assert batch["labels"][0, start].item() == -100  # nothing predicts a row's first token from the previous row
        start = end


@pytest.mark.parametrize("family", ["qwen3", "llama3"])
def test_with_a_kv_cache_packed_rows_see_each_other(replicas, family):
    """Why the script turns the cache off: with use_cache (the config default) transformers builds a plain causal
    mask and the second packed row attends to the first."""
    (a, _), (b, _), _ = rows_for(replicas[family])
    model = load(replicas[family], "sdpa", use_cache=True)
    with torch.no_grad():
        alone = model(input_ids=torch.tensor([b])).logits[0]
        position_ids = torch.tensor([list(range(len(a))) + list(range(len(b)))])
        packed = model(input_ids=torch.tensor([a + b]), position_ids=position_ids).logits[0][len(a):]
    assert (packed - alone).abs().max().item() > 0.1


@pytest.fixture(scope="module")
def script(tmp_path_factory, short_data):
    path = write_script(parse_config({"model": {"name": "org/model"}, "data": {"path": str(short_data)}}),
                        tmp_path_factory.mktemp("packing-script") / "train.py")
    spec = importlib.util.spec_from_file_location("rendered_packing", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rendered_packing"] = module  # a module its dataclasses can find
    spec.loader.exec_module(module)
    return module


def test_the_isolation_proof_accepts_the_replicas_and_refuses_a_leaky_model(script, replicas):
    tokenizer = AutoTokenizer.from_pretrained(replicas["qwen3"])
    rows = [{"messages": short_conversation(i)} for i in range(3)]
    template, _ = mc.resolve_chat_template(tokenizer, "model", "messages", "q", packaged=chat_templates())
    model = load(replicas["qwen3"], "sdpa")
    ok, how = script.packing_isolated(model, tokenizer, rows, "messages", template)
    assert ok and "agree" in how

    real_forward = model.forward

    def leaky(self, *args, position_ids=None, **kwargs):  # ignores the position ids: one causal sequence
        return real_forward(*args, **kwargs)

    model.forward = types.MethodType(leaky, model)
    ok, how = script.packing_isolated(model, tokenizer, rows, "messages", template)
    assert not ok and "see each other" in how


def test_the_batch_check_finds_a_wrong_label_in_padded_and_packed_batches():
    from mcp_server.train.batchcheck import check_batches

    ids_a, ids_b = [5, 6, 7, 8], [9, 10, 11]
    trl_rows = [{"input_ids": ids_a, "labels": [-100, -100, 7, 8]}, {"input_ids": ids_b, "labels": [-100, 10, 11]}]
    checked = {tuple(ids_a): [0, 0, 1, 1], tuple(ids_b): [0, 1, 1]}
    packed = {"input_ids": [ids_a + ids_b], "position_ids": [[0, 1, 2, 3, 0, 1, 2]],
              "labels": [[-100, -100, 7, 8, -100, 10, 11]]}
    padded = {"input_ids": [ids_a, ids_b + [0]], "attention_mask": [[1, 1, 1, 1], [1, 1, 1, 0]],
              "labels": [[-100, -100, 7, 8], [-100, 10, 11, -100]]}
    for good in (packed, padded):
        report = check_batches([good], trl_rows, checked)
        assert report["problems"] == [] and report["verified_per_batch"] == [2]
        assert report["checked_rows_in_dataset"] == 2 and report["checked_rows_mismatched"] == 0
        bad = {**good, "labels": [list(r) for r in good["labels"]]}
        bad["labels"][0][1] = 6  # trains a prompt token
        report = check_batches([bad], trl_rows, checked)
        assert report["sequences_mismatched"] == 1 and "other labels than TRL's row (first at token 1)" in report["problems"][0]
    wrong_rows = [{**trl_rows[0], "labels": [-100, 6, 7, 8]}, trl_rows[1]]  # TRL itself trains the prompt token
    report = check_batches([{**packed, "labels": [[-100, 6, 7, 8, -100, 10, 11]]}], wrong_rows, checked)
    assert report["sequences_mismatched"] == 0 and report["checked_rows_mismatched"] == 1
    unseen = check_batches([{"input_ids": [[1, 2, 3]], "attention_mask": [[1, 1, 1]], "labels": [[-100, 2, 3]]}],
                           trl_rows, checked)
    assert unseen["verified_per_batch"] == [0] and "nothing in it was verified" in unseen["problems"][0]


@pytest.fixture(scope="module")
def trainers(tmp_path_factory, replicas):
    """A real SFTTrainer on the Gemma 4 replica for padded and packed batches, and the run the script's check reads."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model_dir = replicas["gemma4"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    template, _ = mc.resolve_chat_template(tokenizer, "model", "messages", "replica", packaged=chat_templates())
    tokenizer.chat_template = template
    rows = [{"messages": short_conversation(i)} for i in range(24)]
    out = {}
    for packing in (False, True):
        args = SFTConfig(output_dir=str(tmp_path_factory.mktemp("trainer")), max_length=256, packing=packing,
                         per_device_train_batch_size=4, assistant_only_loss=True, report_to="none", use_cpu=True,
                         max_steps=1, padding_free=packing)
        trainer = SFTTrainer(model=load(model_dir, "eager"), args=args, train_dataset=Dataset.from_list(rows),
                             processing_class=tokenizer)
        run = types.SimpleNamespace(data={"mask_check_rows": 32, "messages_column": "messages", "tools_column": "tools"},
                                    tokenizer=tokenizer, train_ds=rows, fmt="messages", template=template, report={})
        out[packing] = trainer, run
    return out


@pytest.mark.parametrize("packing", [False, True], ids=["padded", "packed"])
def test_the_trainers_batches_are_verified_and_a_corrupted_mask_is_caught(script, trainers, packing, capsys):
    trainer, run = trainers[packing]
    script.check_batches_trained(run, trainer, "the fix")
    report = run.report["batches"]
    assert report["batches"] == (2 if packing else 4)  # 24 rows: packed into two batches of rows, or 4 of 6 padded
    assert min(report["verified_per_batch"]) >= 1 and report["problems"] == []
    assert report["checked_rows_in_dataset"] == 24 and report["checked_rows_mismatched"] == 0

    collate = trainer.data_collator

    def trains_a_prompt_token(examples):  # the collated labels train the first token of each batch's first row
        batch = collate(examples)
        batch["labels"][0, 1] = batch["input_ids"][0, 1]
        return batch

    trainer.data_collator = trains_a_prompt_token
    try:
        with pytest.raises(SystemExit):
            script.check_batches_trained(run, trainer, "the fix")
    finally:
        trainer.data_collator = collate
    assert "other labels than TRL's row" in capsys.readouterr().out

    prepared = trainer.train_dataset
    trainer.train_dataset = prepared.map(lambda row: {"labels": [row["input_ids"][0], *row["labels"][1:]]})
    try:  # TRL's own rows train a token the mask check says is context: the batches match them, the check does not
        with pytest.raises(SystemExit):
            script.check_batches_trained(run, trainer, "the fix")
    finally:
        trainer.train_dataset = prepared
    assert "has other labels in TRL's tokenized data" in capsys.readouterr().out
