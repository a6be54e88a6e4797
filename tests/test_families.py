"""The families people train, proven on CPU replicas: the real architecture class, special tokens and stock
chat template of each, the mask check token by token on real converted agent sessions for every revision,
the families that must be refused, and short real training runs whose loss falls."""

from __future__ import annotations


import pytest
import torch
import trl
from pathlib import Path
from transformers import AutoModelForCausalLM, AutoTokenizer

from support.families import REVISIONS, converted_rows, sources, write_rows
from mcp_server.resources import chat_templates
from mcp_server.train import maskcheck as mc
from mcp_server.train.tiny_model import FAMILIES, build_tiny_model

TRL = Path(trl.__file__).parent / "chat_templates"
OURS = chat_templates()
CLASSES = {"qwen3": "Qwen3ForCausalLM", "llama3": "LlamaForCausalLM", "gemma4": "Gemma4ForConditionalGeneration"}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """{template name: converted rows} for every revision checked, plus the plain rows."""
    folder = tmp_path_factory.mktemp("sessions")
    names = {None, *[r for revisions in REVISIONS.values() for r in revisions]}
    return {name: converted_rows(folder, name) for name in names}


@pytest.fixture(scope="module")
def replicas(tmp_path_factory, sessions):
    folder = tmp_path_factory.mktemp("replicas")
    rows = write_rows(folder / "rows.jsonl", sessions[None])
    return {family: build_tiny_model([str(rows)], folder / family, arch=family, vocab_size=2048)
            for family in REVISIONS}


@pytest.mark.parametrize("family", sorted(REVISIONS))
def test_replica_is_the_family_class_with_its_special_tokens_and_stock_template(replicas, family):
    model_dir = replicas[family]
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    spec = FAMILIES[family]
    assert type(model).__name__ == CLASSES[family]
    assert tokenizer.chat_template == (TRL / f"{spec.template}.jinja").read_text()
    for token in (*spec.special, *spec.plain_added):
        assert len(tokenizer(token, add_special_tokens=False)["input_ids"]) == 1, token
    assert tokenizer.eos_token == spec.eos and tokenizer.pad_token == spec.pad
    stops = model.generation_config.eos_token_id
    assert sorted(tokenizer.convert_ids_to_tokens(stops)) == sorted(spec.stops)
    if spec.adds_bos:  # as the real tokenizers do for plain text; chat templates write the bos themselves
        assert tokenizer("hi")["input_ids"][0] == tokenizer.bos_token_id


def test_gemma4_replica_carries_vision_and_audio_towers(replicas):
    model = AutoModelForCausalLM.from_pretrained(replicas["gemma4"])
    names = {n.split(".")[1] for n, _ in model.named_modules() if n.startswith("model.") and n.count(".") >= 1}
    assert {"language_model", "vision_tower", "audio_tower"} <= names


def test_peft_all_linear_alone_would_adapt_the_towers(replicas):
    """The pitfall the script avoids: PEFT's all-linear on the multimodal wrapper reaches into the towers."""
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(replicas["gemma4"]),
                           LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    adapted = {n.rsplit(".lora_A", 1)[0] for n, _ in model.named_parameters() if ".lora_A." in n}
    assert any("vision_tower" in n or "audio_tower" in n for n in adapted)


MATRIX = [(family, revision) for family, revisions in REVISIONS.items() for revision in revisions]


@pytest.mark.parametrize("family,revision", MATRIX)
def test_mask_check_passes_token_by_token_on_real_sessions(replicas, sessions, family, revision):
    tokenizer = AutoTokenizer.from_pretrained(replicas[family])
    tokenizer.chat_template = (TRL / f"{revision}.jinja").read_text()  # the revision a checkpoint would carry
    rows = sessions[revision]
    assert rows and sum(1 for r in rows if any(m.get("tool_calls") for m in r["messages"])) >= 3
    template, label = mc.resolve_chat_template(tokenizer, "model", "messages", f"tiny:{family}",
                                               needs_tools=True, packaged=OURS)
    expected = "trl:qwen3" if family == "qwen3" else f"tunepack:{revision}"
    assert label.startswith(f"model → {expected} ")
    report = mc.check_dataset(tokenizer, rows, fmt="messages", chat_template=template, template_label=label,
                              max_length=1_000_000, sample=len(rows))
    assert report["rows_checked"] == len(rows) and report["problems"] == []
    assert 0.02 < report["trained_token_share"] < 0.9
    print(f"\nMATRIX {family} {revision} train {label} share={report['trained_token_share']:.3f} "
          f"rows={len(rows)} tokens={report['total_tokens']} ({sources()[2]})")


REFUSED = ["llama3", "phi3", "phi3_5", "gemma3", "gemma", "cohere", "cohere2", "lfm2", "deepseek_r1_distill"]


@pytest.mark.parametrize("stock", REFUSED)
def test_families_that_cannot_carry_tool_calls_are_refused_with_choices(replicas, sessions, stock):
    tokenizer = AutoTokenizer.from_pretrained(replicas["gemma4"])  # a tokenizer with a bos token, as these families have
    tokenizer.chat_template = (TRL / f"{stock}.jinja").read_text()
    with pytest.raises(mc.MaskCheckError) as err:
        template, label = mc.resolve_chat_template(tokenizer, "model", "messages", f"stock {stock}",
                                                   needs_tools=True, packaged=OURS)
        mc.check_dataset(tokenizer, sessions["qwen3"], fmt="messages", chat_template=template,
                         template_label=label, max_length=1_000_000)
    assert "--rows turn" in err.value.fix or "trl:qwen3" in err.value.fix
    print(f"\nMATRIX refuse {stock}: {err.value.problem[:160]}")


@pytest.mark.parametrize("family", ["llama3", "gemma4"])
def test_rows_shaped_for_the_family_keep_every_call(sessions, family):
    """Llama takes one call per message and drops a calling message's text; the shaping keeps every call."""
    whole = lambda rows: [r for r in rows if "large-session" not in r["source"]]  # noqa: E731 (the long one is cut)
    plain, shaped = whole(sessions[None]), whole(sessions[REVISIONS[family][0]])
    calls = lambda rows: sum(len(m.get("tool_calls") or []) for r in rows for m in r["messages"])  # noqa: E731
    assert calls(shaped) == calls(plain)
    if family == "llama3":
        assert all(len(m.get("tool_calls") or []) <= 1 and not (m.get("tool_calls") and m["content"])
                   for r in shaped for m in r["messages"])


# --- real training on the replicas ----------------------------------------------------------------

@pytest.fixture(scope="module")
def short_replicas(tmp_path_factory, short_data):
    folder = tmp_path_factory.mktemp("short-replicas")
    return {f: build_tiny_model([str(short_data)], folder / f, arch=f, vocab_size=1024) for f in ("llama3", "gemma4")}


@pytest.mark.slow
def test_gemma4_replica_trains_packed_language_model_only_and_reloads(tmp_path, short_replicas, short_data):
    from test_training import losses, train

    base = short_replicas["gemma4"]
    _, out, manifest, stdout = train(tmp_path, base, short_data, "gemma4-packed",
                                     training={"packing": True, "max_steps": 20, "learning_rate": 1e-2})
    first, *_, last = losses(out)
    assert last < first * 0.8, (first, last)
    assert manifest["chat_template"].startswith("model → tunepack:gemma4_v5")
    assert manifest["model_class"] == "Gemma4ForConditionalGeneration"
    assert "Processor" not in manifest["processing_class"]  # the tokenizer: TRL's text path, packing allowed
    lora = manifest["lora_targets"]
    assert lora["adapted"] >= 4 * 7 and lora["outside_language_model"] == 0
    assert "language_model" in lora["resolved"] and "towers stay frozen" in stdout
    print(f"\nLOSS gemma4 {first:.3f} -> {last:.3f} over {manifest['training']['steps']} steps (packed)")

    from peft import PeftModel

    ids = torch.tensor([AutoTokenizer.from_pretrained(base)("Run the tests in pkg3.")["input_ids"]])
    reloaded = AutoModelForCausalLM.from_pretrained(out)  # what evaluation does: base read from adapter_config
    assert type(reloaded).__name__ == "Gemma4ForConditionalGeneration"
    explicit = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), out)
    plain = AutoModelForCausalLM.from_pretrained(base)
    with torch.no_grad():
        a, b, c = (m(input_ids=ids).logits for m in (reloaded, explicit, plain))
    assert torch.allclose(a, b, atol=1e-5) and not torch.allclose(a, c, atol=1e-3)


@pytest.mark.slow
def test_llama3_replica_trains_and_its_loss_falls(tmp_path, short_replicas, short_data):
    from test_training import losses, train

    _, out, manifest, _ = train(tmp_path, short_replicas["llama3"], short_data, "llama3",
                                training={"packing": True, "max_steps": 20, "learning_rate": 1e-2})
    first, *_, last = losses(out)
    assert last < first * 0.8, (first, last)
    assert manifest["chat_template"].startswith("model → tunepack:llama3_2")
    assert manifest["model_class"] == "LlamaForCausalLM"
    print(f"\nLOSS llama3 {first:.3f} -> {last:.3f} over {manifest['training']['steps']} steps")


@pytest.mark.parametrize("family", ["llama3", "gemma4"])
def test_trl_labels_equal_the_checked_mask_token_by_token(short_replicas, family):
    """TRL's own training features for a tool-calling conversation, with the template the script picks."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    from support.common import short_conversation

    tokenizer = AutoTokenizer.from_pretrained(short_replicas[family])
    template, _ = mc.resolve_chat_template(tokenizer, "model", "messages", family, packaged=OURS)
    tokenizer.chat_template = template
    messages = short_conversation(5)
    trainer = SFTTrainer(
        model=str(short_replicas[family]), processing_class=tokenizer,
        train_dataset=Dataset.from_list([{"messages": messages}]),
        peft_config=LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"),
        args=SFTConfig(output_dir=str(short_replicas[family].parent / f"labels-{family}"), assistant_only_loss=True,
                       max_length=512, report_to="none", use_cpu=True, max_steps=1, activation_checkpointing=False))
    ids, labels = trainer.train_dataset[0]["input_ids"], trainer.train_dataset[0]["labels"]
    expected, mask, _, _ = mc.tokenize_row(tokenizer, messages, None, template)
    assert ids == expected and mc.check_row(tokenizer, messages, None, template) == []
    assert [label != -100 for label in labels] == [bool(m) for m in mask]
    trained = tokenizer.decode([t for t, label in zip(ids, labels) if label != -100])
    assert "pytest pkg5" in trained and "All 1 tests in pkg5 pass." in trained
    for context in ("You are a coding agent.", "Run the tests in pkg5.", "1 passed"):
        assert context not in trained


def test_the_tutorial_config_parses_and_its_cpu_twin_loads(tmp_path):
    import yaml

    from support.common import REPO
    from mcp_server.config import load_config, parse_config

    raw = yaml.safe_load((REPO / "examples" / "gemma4-pi-traces.yaml").read_text())
    cfg = parse_config(raw)
    assert cfg.model.name == "google/gemma-4-E2B-it" and cfg.data.format == "traces" and cfg.chat_template == "model"
    assert cfg.data.hub_id and not cfg.data.path
    data = {k: v for k, v in raw["data"].items() if k not in ("hub_id", "revision")}
    twin = {**raw, "model": {"name": "tiny:gemma4"}, "chat_template": "tunepack:gemma4_v5",
            "data": {**data, "path": str(REPO / "tests" / "fixtures" / "traces" / "pi")}}
    (tmp_path / "twin.yaml").write_text(yaml.safe_dump(twin))
    loaded = load_config(tmp_path / "twin.yaml")
    assert loaded.chat_template == "tunepack:gemma4_v5" and loaded.model.is_tiny
    with pytest.raises(Exception, match="tunepack:gemma4_v5"):
        parse_config({**twin, "chat_template": "tunepack:gemma5"})


# The Gemma 4 chain through the whole pipeline (mask check → LoRA on the language model only → registry → Inspect
# eval of base and base + adapter) is the tutorial's CPU twin: tests/test_tutorial.py, one adapter for the family.
