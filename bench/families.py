"""The family matrix: which model families train on tool-calling agent sessions, with which template,
what share of the tokens is trained, and how the loss of each trained CPU replica moves.

For every replica (tiny:qwen3, tiny:llama3, tiny:gemma4) and every stock revision of its family, the
sessions are converted and shaped for that revision, the script's template choice runs on a tokenizer
carrying the stock template, and the mask check verifies every row token by token. Families whose
stock template cannot carry tool calls are listed with the refusal. Then each replica trains on its
family's rows through the rendered script (packed, 20 steps) and the first and last logged loss print.
Figures only; nothing is asserted (tests/test_families.py holds the checks).

Usage:
    python bench/families.py            # real sessions from ../shared/data/traces (else tests/fixtures)
    python bench/families.py --quick    # the matrix only, no training (CI smoke)
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
sys.path.insert(0, str(REPO / "tests"))
REFUSED = ["llama3", "phi3", "phi3_5", "gemma3", "cohere", "lfm2"]


def matrix(folder: Path, replicas: dict, rows_by_template: dict) -> None:
    import trl
    from transformers import AutoTokenizer

    from support.families import REVISIONS
    from mcp_server.resources import chat_templates
    from mcp_server.train import maskcheck as mc

    stock_dir = Path(trl.__file__).parent / "chat_templates"
    print(f"{'family':8} {'revision':10} {'decision':8} {'template':28} {'rows':>4} {'tokens':>7} {'trained':>7}")
    for family, revisions in REVISIONS.items():
        for revision in revisions:
            tokenizer = AutoTokenizer.from_pretrained(replicas[family])
            tokenizer.chat_template = (stock_dir / f"{revision}.jinja").read_text()
            rows = rows_by_template[revision]
            template, label = mc.resolve_chat_template(tokenizer, "model", "messages", family, packaged=chat_templates())
            report = mc.check_dataset(tokenizer, rows, fmt="messages", chat_template=template, template_label=label,
                                      max_length=1_000_000, sample=len(rows))
            picked = label.split(" ")[2]
            print(f"{family:8} {revision:10} {'train':8} {picked:28} {len(rows):4d} {report['total_tokens']:7d} "
                  f"{report['trained_token_share']:7.1%}")
    tokenizer = AutoTokenizer.from_pretrained(replicas["gemma4"])
    for stock in REFUSED:
        tokenizer.chat_template = (stock_dir / f"{stock}.jinja").read_text()
        try:
            mc.resolve_chat_template(tokenizer, "model", "messages", stock, packaged=chat_templates())
            print(f"{'-':8} {stock:10} {'train?':8} (unexpected)")
        except mc.MaskCheckError as exc:
            why = exc.problem.split(", which itself ", 1)[-1].split(",")[0]
            print(f"{'-':8} {stock:10} {'refuse':8} {why[:70]}")


def train(folder: Path, family: str, model_dir: Path, rows: list[dict]) -> str:
    from support.families import write_rows
    from mcp_server.config import parse_config
    from mcp_server.methods import write_script

    data = write_rows(folder / f"train-{family}.jsonl", rows)
    cfg = parse_config({"model": {"name": str(model_dir)}, "data": {"path": str(data), "allow_truncation": True},
                        "training": {"max_steps": 20, "max_length": 1024, "packing": True, "logging_steps": 2,
                                     "learning_rate": 5e-3, "per_device_train_batch_size": 2, "warmup_ratio": 0.0,
                                     "gradient_checkpointing": False},
                        "tracking": {"project": "bench-families", "run_name": family}})
    script = write_script(cfg, folder / f"train-{family}.py")
    out = folder / f"adapter-{family}"
    done = subprocess.run([sys.executable, str(script), "--output-dir", str(out)], capture_output=True, text=True,
                          cwd=folder, env=os.environ.copy())
    if done.returncode != 0:
        return f"failed: {done.stdout[-400:]}"
    manifest = json.loads((out / "tunepack_manifest.json").read_text())
    t = manifest["training"]
    return (f"{manifest['model_class']}: loss {t['first_loss']:.3f} → {t['last_loss']:.3f} over {t['steps']} steps "
            f"({t['train_runtime_s']:.0f} s, {manifest['lora_targets']['adapted']} LoRA modules, "
            f"{manifest['lora_targets']['outside_language_model']} outside the language model)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the matrix only (CI smoke)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tunepack-bench-families-"))
    os.environ.setdefault("TUNEPACK_HOME", str(folder / "home"))
    os.environ.setdefault("TRACKIO_DIR", str(folder / "trackio"))

    from support.families import REVISIONS, converted_rows, sources, write_rows
    from mcp_server.train.tiny_model import FAMILIES, build_tiny_model

    names = {None, *[r for revisions in REVISIONS.values() for r in revisions]}
    rows = {name: converted_rows(folder, name) for name in names}
    plain = write_rows(folder / "plain.jsonl", rows[None])
    replicas = {f: build_tiny_model([str(plain)], folder / f, arch=f, vocab_size=2048) for f in REVISIONS}
    print(f"sessions: {sources()[2]} ({len(rows[None])} conversations)\n")
    matrix(folder, replicas, rows)
    if args.quick:
        return
    print()
    for family in REVISIONS:
        print(f"{family:8} {train(folder, family, replicas[family], rows[FAMILIES[family].template])}")


if __name__ == "__main__":
    main()
