"""SFT throughput: the rendered script with its defaults against a plain TRL baseline, side by side.

Data: the agent sessions of ../shared/data/traces (tests/fixtures/traces without it) converted to chat rows and
cut into windows of ``--max-length`` tokens (what the script trains on), split by conversation into train and
held-out rows. Model: the tiny Qwen3 replica built on those rows (float32 on CPU, the dtype a CPU supports).
- baseline: TRL's SFTTrainer with its defaults (activation checkpointing on), the same rows, template, LoRA and
  hyperparameters, padded batches, no packing — and once more with checkpointing off;
- packing alone: the baseline with TRL's packing switched on (batch 4, padding-free);
- ours: the rendered script, defaults (packing where isolation is proven, one packed row per micro-batch, no
  checkpointing on CPU, length-grouped batches otherwise).
One epoch each; the figure is trained tokens (labels not -100) per second of training; padding waste is the share
of padding in the collated batches; the held-out loss is the assistant-token loss of each adapter on held-out rows.
Prints figures only.

Usage:
    python bench/sft.py                 # max_length 4096, every window (minutes)
    python bench/sft.py --quick         # max_length 512, 16 windows (CI smoke)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared" / "data" / "traces"

BASELINE = '''
import json, sys, time
import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer
cfg = json.loads(sys.argv[1])
tokenizer = AutoTokenizer.from_pretrained(cfg["model"])
tokenizer.chat_template = open(cfg["template"]).read()
data = load_dataset("json", data_files=cfg["train"], split="train")
cuda = torch.cuda.is_available()
dtype = torch.bfloat16 if cuda and torch.cuda.get_device_capability(0) >= (8, 0) else torch.float32
kwargs = {"dtype": dtype}
if cfg.get("quantization") == "4bit":
    from transformers import BitsAndBytesConfig
    kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                       bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype)
model = AutoModelForCausalLM.from_pretrained(cfg["model"], **kwargs)
args = SFTConfig(output_dir=cfg["out"] + "/ckpt", num_train_epochs=1, max_steps=cfg.get("max_steps", -1),
                 per_device_train_batch_size=cfg["batch"], bf16=dtype == torch.bfloat16, use_cpu=not cuda,
                 learning_rate=cfg["lr"], max_length=cfg["max_length"], seed=cfg["seed"],
                 report_to="none", save_strategy="no", logging_steps=10_000, disable_tqdm=True,
                 completion_only_loss=True, assistant_only_loss=True, packing=cfg["packing"],
                 gradient_checkpointing=cfg["checkpointing"], warmup_steps=0.03, lr_scheduler_type="cosine")
trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                     peft_config=LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear",
                                            task_type="CAUSAL_LM"))
pads = total = 0
for batch in trainer.get_train_dataloader():
    total += batch["input_ids"].numel()
    pads += int((batch["attention_mask"] == 0).sum()) if "attention_mask" in batch else 0
steps = len(trainer.train_dataset) if args.max_steps <= 0 else args.max_steps * cfg["batch"]
rows = [trainer.train_dataset[i] for i in range(min(steps, len(trainer.train_dataset)))]
trained = sum(sum(1 for x in row["labels"] if x != -100) for row in rows)
processed = sum(len(row["input_ids"]) for row in rows)
result = trainer.train()
trainer.save_model(cfg["out"])
print("RESULT " + json.dumps({"runtime_s": result.metrics["train_runtime"], "trained_tokens": trained,
                              "tokens_processed": processed, "padding_waste": pads / total if total else 0.0,
                              "peak_memory_gb": torch.cuda.max_memory_allocated() / 2**30 if cuda else None}))
'''

HELD_OUT = '''
import json, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
sys.path.insert(0, sys.argv[3])
from mcp_server.train import maskcheck as mc
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
template = open(sys.argv[4]).read()
model = AutoModelForCausalLM.from_pretrained(sys.argv[2]).eval()
nll = count = 0.0
for line in open(sys.argv[5]):
    row = json.loads(line)
    messages, tools, n_prompt = mc.conversation(row, "prompt_completion")
    ids, mask, _, _ = mc.tokenize_row(tokenizer, messages, tools, template, n_prompt)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, :-1].float()
    target, keep = torch.tensor(ids[1:]), torch.tensor(mask[1:], dtype=torch.bool)
    losses = torch.nn.functional.cross_entropy(logits, target, reduction="none")[keep]
    nll, count = nll + losses.sum().item(), count + keep.sum().item()
print("RESULT " + json.dumps({"held_out_loss": nll / max(count, 1), "held_out_tokens": count}))
'''


def run_python(code_or_path: str, *args: str, env: dict) -> dict:
    command = [sys.executable, "-c", code_or_path, *args] if "\n" in code_or_path else [sys.executable, code_or_path, *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"bench/sft.py: a run failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    line = next(l for l in reversed(done.stdout.splitlines()) if l.startswith("RESULT "))
    return json.loads(line[7:])


def prepare(folder: Path, max_length: int, limit: int | None, fixtures_only: bool = False) -> dict:
    """Windows of the converted sessions, split into train / held-out by conversation; the replica and template."""
    from transformers import AutoTokenizer

    from mcp_server.resources import chat_templates
    from mcp_server.traces import ConvertOptions, convert
    from mcp_server.train import maskcheck as mc
    from mcp_server.train.tiny_model import build_tiny_model
    from mcp_server.train.windows import window_rows

    fixtures = str(REPO / "tests" / "fixtures" / "traces")
    sources = [str(SHARED)] if SHARED.is_dir() and not fixtures_only else [fixtures]
    convert(sources, folder / "rows.jsonl", ConvertOptions())
    model = build_tiny_model([str(folder / "rows.jsonl")], folder / "tiny-qwen3", arch="qwen3", vocab_size=2048)
    tokenizer = AutoTokenizer.from_pretrained(model)
    template, _ = mc.resolve_chat_template(tokenizer, "model", "messages", "tiny:qwen3", packaged=chat_templates())
    (folder / "template.jinja").write_text(template)

    def count(messages, tools):
        return len(tokenizer.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=True,
                                                 return_dict=True)["input_ids"])

    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines()]
    convs = [mc.conversation(r, "messages")[:2] + ({"conv": i},) for i, r in enumerate(rows)]
    windows, stats = window_rows(convs, count, max_length)
    with_windows = sorted({w["conv"] for w in windows})
    held = set(with_windows[1::4]) or set(with_windows[-1:])  # every 4th conversation that has windows
    train = [w for w in windows if w["conv"] not in held][:limit]
    test = [w for w in windows if w["conv"] in held][:max(4, (limit or 10**9) // 8)]
    for name, part in (("train", train), ("held_out", test)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(w) + "\n" for w in part))
    lengths = [count(w["prompt"] + w["completion"], w["tools"]) for w in train]
    return {"model": str(model), "template": str(folder / "template.jinja"), "train_rows": len(train),
            "max_length": max_length,
            "held_out_rows": len(test), "mean_tokens": sum(lengths) / len(lengths), "max_tokens": max(lengths),
            "min_tokens": min(lengths), "sources": os.path.relpath(sources[0], REPO), "windows": stats}


def ours(folder: Path, setup: dict, max_length: int, env: dict, extra: dict | None = None) -> dict:
    from mcp_server.config import parse_config
    from mcp_server.methods import write_script

    extra = extra or {}
    cfg = parse_config({"model": {"name": setup["model"], **extra.get("model", {})},
                        "data": {"path": str(folder / "train.jsonl")}, "quantization": extra.get("quantization", "auto"),
                        "lora": {"r": 16, "alpha": 32, "dropout": 0.05},
                        "training": {"max_length": max_length, "num_train_epochs": 1, "learning_rate": 5e-3,
                                     "per_device_train_batch_size": 4, "logging_steps": 10_000, "seed": 42,
                                     **extra.get("training", {})},
                        "tracking": {"project": "bench-sft", "run_name": "ours"}})
    script = write_script(cfg, folder / "ours.py")
    out = folder / "ours-adapter"
    done = subprocess.run([sys.executable, str(script), "--output-dir", str(out)], capture_output=True, text=True,
                          env=env)
    if done.returncode != 0:
        raise SystemExit(f"bench/sft.py: the rendered script failed:\n{done.stdout[-3000:]}")
    manifest = json.loads((out / "tunepack_manifest.json").read_text())
    trained = manifest["mask_check"]["trained_tokens"]
    if manifest["config"]["training"]["max_steps"] > 0:  # a capped run: the trained share of the tokens it saw
        trained = int(manifest["mask_check"]["trained_token_share"] * (manifest["training"]["tokens_seen"] or 0))
    return {"runtime_s": manifest["training"]["train_runtime_s"], "trained_tokens": trained,
            "tokens_processed": manifest["training"].get("tokens_seen"), "peak_memory_gb": manifest["device"]["peak_memory_gb"],
            "padding_waste": manifest["speed"]["padding"]["waste"], "packing": manifest["speed"]["packing"],
            "micro_batch": manifest["speed"]["micro_batch"], "checkpointing": manifest["speed"]["checkpointing"],
            "adapter": str(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="512 tokens, 16 windows (CI smoke)")
    parser.add_argument("--max-length", type=int, default=None)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    max_length = args.max_length or (512 if args.quick else 4096)
    folder = Path(tempfile.mkdtemp(prefix="tunepack-bench-sft-"))
    env = {**os.environ, "TUNEPACK_HOME": str(folder / "home"), "TRACKIO_DIR": str(folder / "trackio"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    os.environ.update({k: env[k] for k in ("TUNEPACK_HOME", "TRACKIO_DIR")})
    setup = prepare(folder, max_length, 16 if args.quick else None)
    common = {"model": setup["model"], "template": setup["template"], "train": str(folder / "train.jsonl"),
              "batch": 4, "lr": 5e-3, "max_length": max_length, "seed": 42}
    runs = {}
    for name, extra in (("trl_default", {"packing": False, "checkpointing": True}),
                        ("trl_no_checkpointing", {"packing": False, "checkpointing": False}),
                        ("trl_packing", {"packing": True, "checkpointing": False})):
        if args.quick and name != "trl_default":
            continue
        runs[name] = run_python(BASELINE, json.dumps({**common, **extra, "out": str(folder / name)}), env=env)
        runs[name]["adapter"] = str(folder / name)
    runs["ours"] = ours(folder, setup, max_length, env)
    for name, run in runs.items():
        run["trained_tokens_per_s"] = run["trained_tokens"] / run["runtime_s"]
        held = run_python(HELD_OUT, setup["model"], run["adapter"], str(REPO), setup["template"],
                          str(folder / "held_out.jsonl"), env=env)
        run.update(held)
    base = runs["trl_default"]
    figures = {"max_length": max_length, **{k: setup[k] for k in ("train_rows", "held_out_rows", "mean_tokens",
                                                                   "min_tokens", "max_tokens", "sources")},
               "runs": runs, "speedup_vs_trl_default": runs["ours"]["trained_tokens_per_s"] / base["trained_tokens_per_s"],
               "held_out_loss_change": runs["ours"]["held_out_loss"] / base["held_out_loss"] - 1}
    if "trl_no_checkpointing" in runs:
        figures["speedup_vs_trl_no_checkpointing"] = (runs["ours"]["trained_tokens_per_s"]
                                                      / runs["trl_no_checkpointing"]["trained_tokens_per_s"])
        figures["speedup_vs_trl_packing"] = runs["ours"]["trained_tokens_per_s"] / runs["trl_packing"]["trained_tokens_per_s"]
    print(f"data: {setup['train_rows']} train / {setup['held_out_rows']} held-out windows of ≤ {max_length} tokens "
          f"(mean {setup['mean_tokens']:.0f}, {setup['min_tokens']}–{setup['max_tokens']}) from {setup['sources']}")
    print(f"{'run':22} {'trained tok/s':>14} {'padding':>8} {'held-out loss':>14} {'runtime':>9}")
    for name, run in runs.items():
        print(f"{name:22} {run['trained_tokens_per_s']:14.0f} {run['padding_waste']:8.1%} {run['held_out_loss']:14.4f} "
              f"{run['runtime_s']:8.1f}s")
    for key in ("speedup_vs_trl_default", "speedup_vs_trl_no_checkpointing", "speedup_vs_trl_packing"):
        if key in figures:
            print(f"{key:>32}: {figures[key]:.2f}x")
    print(f"{'held-out loss, ours vs default':>32}: {figures['held_out_loss_change']:+.1%}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str))


if __name__ == "__main__":
    main()
