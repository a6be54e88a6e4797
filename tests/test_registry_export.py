"""`tunepack export`: a registry version merged into its full-precision base (logits equal base + adapter),
with tokenizer and card; the refusals; the push to the Hub stand-in (private; public only with approval); and
the printed harness configs, checked by the real OpenCode and Codex CLIs."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
import torch
from support.harness import cli, isolated_env, run

from mcp_server.approval import Consent
from mcp_server.config import parse_config
from mcp_server.errors import RegistryError
from mcp_server.registry import LocalRegistry
from mcp_server.registry.cli import add_parser
from mcp_server.registry.export import export_version

NAME = "agent-sft"


def make_adapter(base_dir, out, manifest_extra=None):
    """A LoRA adapter built directly with PEFT (no training), lora_B random so it changes the logits, saved with
    the tokenizer and a manifest shaped like the training script's."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear",
                                                  lora_dropout=0.0, task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.2)
    peft_model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(base_dir)).save_pretrained(str(out))
    cfg = parse_config({"model": {"name": "tiny:qwen3"}, "data": {"path": str(base_dir / "config.json")},
                        "lora": {"r": 8, "alpha": 16}, "output": {"name": NAME}})
    manifest = {"tunepack_version": "0.1.0", "run_name": "r1", "config": cfg.model_dump(mode="json"),
                "model_path": str(base_dir), "model_class": type(model).__name__,
                "quantization": {"setting": "auto", "used_4bit": False, "reason": "auto: no CUDA, plain LoRA"},
                "precision": {"weights": "float32", "device": "CPU"}, **(manifest_extra or {})}
    (out / "tunepack_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def setup(tiny_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    registry = LocalRegistry(root / "reg")
    adapter = make_adapter(tiny_model_dir, root / "adapter")
    entry = registry.push(adapter, NAME, card="---\nlibrary_name: peft\n---\n# agent-sft\n\nTrained on traces.\n",
                          base_model="tiny:qwen3")
    merged = export_version(NAME, merge=True, output=root / "merged", registry=registry)
    return {"root": root, "registry": registry, "entry": entry, "merged": merged, "base": tiny_model_dir}


def logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_merged_logits_match_base_plus_adapter(setup):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    done = setup["merged"]
    base = AutoModelForCausalLM.from_pretrained(str(setup["base"]), dtype=torch.float32).eval()
    ids = torch.randint(0, base.config.vocab_size, (2, 24), generator=torch.Generator().manual_seed(1))
    plain = logits(base, ids)
    with_adapter = logits(PeftModel.from_pretrained(base, setup["entry"].path).eval(), ids)
    merged = logits(AutoModelForCausalLM.from_pretrained(done.merged_dir, dtype=torch.float32).eval(), ids)
    diff = float((merged - with_adapter).abs().max())
    effect = float((with_adapter - plain).abs().max())
    print(f"\nEXPORT max|merged - (base + adapter)| = {diff:.2e}; adapter effect max|Δ| = {effect:.2f}; "
          f"export's own probe {done.max_abs_logit_diff:.2e}")
    assert effect > 0.1  # the adapter changes the model, so a merge that dropped it would fail below
    assert diff < 1e-4 and done.max_abs_logit_diff < 1e-4
    assert (done.status, done.dtype, done.compute_dtype) == ("merged", "float32", "float32")


def test_merged_folder_is_standalone_with_tokenizer_and_card(setup):
    done, entry = setup["merged"], setup["entry"]
    folder = setup["root"] / "merged"
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md",
            "tunepack_export.json", "tunepack_manifest.json"} <= names
    assert not any(n.startswith("adapter_") for n in names)
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".tunepack-export-")]
    card = (folder / "README.md").read_text()
    meta = card.split("---")[1]
    assert "library_name: transformers" in meta and "merged" in meta and "peft" not in meta
    assert "merged" in card and f"{NAME} v{entry.version}" in card and "`tiny:qwen3`" in card
    assert done.adapter_sha256 in card and "Trained on traces." in card  # the adapter's own card follows
    record = json.loads((folder / "tunepack_export.json").read_text())
    assert record["version"] == entry.version and record["tokenizer_from"] == "adapter"


def test_refusals(setup, tmp_path):
    reg = setup["registry"]
    with pytest.raises(RegistryError, match="no adapter named 'nope'"):
        export_version("nope", merge=True, output=tmp_path / "a", registry=reg)
    with pytest.raises(RegistryError, match="no version 9"):
        export_version(NAME, 9, merge=True, output=tmp_path / "a", registry=reg)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(RegistryError, match="exists and is not empty.*Fix: pick a new folder"):
        export_version(NAME, merge=True, output=busy, registry=reg)
    assert [p.name for p in tmp_path.iterdir()] == ["busy"] and (busy / "keep.txt").read_text() == "mine"
    with pytest.raises(RegistryError, match="--merge is not set"):
        export_version(NAME, push_repo="alice/x", registry=reg)


def test_a_missing_local_base_is_refused_and_nothing_is_written(setup, tmp_path):
    with pytest.raises(RegistryError, match="base model folder .* is missing.*Fix: restore it"):
        export_version(NAME, merge=True, output=tmp_path / "out", base_override=str(tmp_path / "gone"),
                       registry=setup["registry"])
    assert list(tmp_path.iterdir()) == []


def test_a_base_neither_local_nor_on_the_hub_is_refused(hub, setup, tmp_path):
    with pytest.raises(RegistryError, match="alice/no-such-base is not available locally and the Hub could not"):
        export_version(NAME, merge=True, output=tmp_path / "out", base_override="alice/no-such-base",
                       registry=setup["registry"])
    assert list(tmp_path.iterdir()) == []


def test_an_adapter_for_another_architecture_is_refused(setup, tmp_path, tiny_model_dir):
    """The run's model class differs from the base found; and a base whose shapes differ fails inside PEFT."""
    llama = tmp_path / "llama"
    shutil.copytree(tiny_model_dir, llama)
    cfg = json.loads((llama / "config.json").read_text())
    (llama / "config.json").write_text(json.dumps({**cfg, "architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(RegistryError, match="trained on a Qwen3ForCausalLM, but the base model found is a Llama"):
        export_version(NAME, merge=True, output=tmp_path / "o1", base_override=str(llama), registry=setup["registry"])
    wider = tmp_path / "wider"
    shutil.copytree(tiny_model_dir, wider)
    (wider / "config.json").write_text(json.dumps({**cfg, "intermediate_size": cfg["intermediate_size"] * 2}))
    from transformers import AutoConfig, AutoModelForCausalLM

    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(wider))).save_pretrained(str(wider))
    with pytest.raises(RegistryError, match="adapter does not fit the base model"):
        export_version(NAME, merge=True, output=tmp_path / "o2", base_override=str(wider), registry=setup["registry"])
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tunepack-export-")]


def test_push_is_private_and_public_needs_approval(hub, setup):
    reg, folder = setup["registry"], setup["root"] / "merged"
    waiting = export_version(NAME, merge=True, output=folder, push_repo="alice/agent-sft-public", private=False,
                             registry=reg)
    assert waiting.status == "approval_required" and waiting.decision.approval_token and waiting.push is None
    assert not [r for r in hub.state.repos if r.startswith("alice/")]  # nothing pushed without the human's yes
    done = export_version(NAME, merge=True, output=folder, push_repo="alice/agent-sft-merged", registry=reg)
    assert done.reused and done.push.private  # the finished merge is reused: a failed push is simply re-run
    repo = hub.state.repos["alice/agent-sft-merged"]
    assert repo["private"] is True and repo["commits"] == [done.push.commit]
    assert {"model.safetensors", "config.json", "tokenizer.json", "README.md"} <= set(repo["files"])
    assert b"library_name: transformers" in repo["files"]["README.md"]
    approved = export_version(NAME, merge=True, output=folder, push_repo="alice/agent-sft-public", private=False,
                              consent=Consent(token=waiting.decision.approval_token), registry=reg)
    assert approved.decision.via == "token" and not approved.push.private
    assert hub.state.repos["alice/agent-sft-public"]["private"] is False


def cli_output(capsys, *argv) -> str:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["export", *argv])
    args.func(args)
    return capsys.readouterr().out


@pytest.fixture
def default_registry(setup, monkeypatch, tmp_path):
    """The CLI reads the default registry: point TUNEPACK_HOME at a copy holding the test's version."""
    monkeypatch.setenv("TUNEPACK_HOME", str(tmp_path / "home"))
    shutil.copytree(setup["root"] / "reg", tmp_path / "home" / "registry")
    return setup["entry"]


def test_cli_prints_vllm_with_lora_and_the_harness_configs(capsys, default_registry, tmp_path):
    out = cli_output(capsys, NAME)
    entry = default_registry
    assert f"vllm serve {setup_base(entry)} --enable-lora --lora-modules {NAME}={entry.path}" in out
    assert "--enable-lora" in out and "--tool-call-parser hermes" in out and "--max-lora-rank" not in out
    assert '"baseURL": "http://127.0.0.1:8000/v1"' in out and 'wire_api = "responses"' in out
    assert "ANTHROPIC_BASE_URL=http://127.0.0.1:8000 " in out and entry.version == 1
    merged = json.loads(cli_output(capsys, NAME, "--merge", "-o", str(tmp_path / "m"), "--json"))
    assert merged["serve"]["vllm_command"].startswith(f"vllm serve {tmp_path / 'm'} --served-model-name {NAME}")


def setup_base(entry) -> str:
    return json.loads((Path(entry.path) / "tunepack_manifest.json").read_text())["model_path"]


def opencode_block(text: str) -> dict:
    start = text.index("# 2a.")
    body = text[text.index("{", start):text.index("# 2b.")]
    return json.loads(body)


def codex_block(text: str) -> str:
    return text[text.index("\n", text.index("# 2b.")) + 1:text.index("# 2c.")]


def test_printed_configs_pass_the_real_opencode_and_codex(capsys, default_registry, tmp_path):
    text = cli_output(capsys, NAME)
    project, home = tmp_path / "project", tmp_path / "oc-home"
    project.mkdir()
    block = opencode_block(text)
    (project / "opencode.json").write_text(json.dumps(block))
    code, out = run([cli("opencode"), "debug", "config"], isolated_env(home), cwd=project)
    assert code == 0, out
    loaded = json.loads(out[out.index("{"):])
    assert loaded["provider"] == block["provider"] and loaded["model"] == f"tunepack-vllm/{NAME}"
    codex_home = home / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(codex_block(text))
    code, out = run([cli("codex"), "mcp", "list"], isolated_env(home, CODEX_HOME=str(codex_home)), cwd=project)
    assert code == 0 and "Error" not in out, out
    (codex_home / "config.toml").write_text(codex_block(text).replace('"responses"', '"chat"'))
    code, out = run([cli("codex"), "mcp", "list"], isolated_env(home, CODEX_HOME=str(codex_home)), cwd=project)
    assert code != 0 and "wire_api" in out  # the check bites: Codex refuses the old chat wire API


def test_a_remote_run_is_merged_from_its_hub_repo(hub, setup, tmp_path):
    """A version whose adapter lives only in the Hub repo a remote job pushed: downloaded, then merged."""
    from mcp_server.registry import read_manifest
    from mcp_server.registry.hub import push_folder

    entry = setup["entry"]
    pushed = push_folder(Path(entry.path), "alice/remote-sft", private=True, message="adapter", what="the adapter")
    reg = LocalRegistry(tmp_path / "reg")
    reg.record_remote("remote-sft", manifest=read_manifest(entry.path), hub_repo="alice/remote-sft",
                      hub_commit=pushed.commit, card=lambda v: "# remote\n")
    served = export_version("remote-sft", registry=reg)
    assert "--lora-modules remote-sft=alice/remote-sft" in served.serve.vllm_command
    assert any("HF_TOKEN" in n for n in served.serve.notes)
    stale = tmp_path / ".tunepack-export-999999999-x"  # left by an export that was killed mid-merge
    (stale / "model").mkdir(parents=True)
    done = export_version("remote-sft", merge=True, output=tmp_path / "m", registry=reg)
    assert not stale.exists()
    assert done.adapter_sha256 == setup["merged"].adapter_sha256 and done.max_abs_logit_diff < 1e-4
    assert (tmp_path / "m" / "model.safetensors").is_file()


def test_dtypes_follow_the_run_then_the_checkpoint_and_merge_in_float32_on_cpu():
    from mcp_server.registry.export import dtypes

    run = {"config": {"model": {"dtype": "auto"}}, "precision": {"weights": "float32"}}
    assert dtypes(run, {"dtype": "bfloat16"}, cuda=False) == ("bfloat16", "float32")  # QLoRA-era checkpoint dtype
    assert dtypes(run, {"dtype": "bfloat16"}, cuda=True) == ("bfloat16", "bfloat16")
    assert dtypes(run, {"text_config": {"dtype": "float16"}}, cuda=True) == ("float16", "float16")
    assert dtypes({"config": {"model": {"dtype": "float16"}}}, {"dtype": "bfloat16"}, cuda=False) == \
        ("float16", "float32")
    assert dtypes(run, {}, cuda=False) == ("float32", "float32")
