"""Benchmark the spine on CPU: the demo's wall time, training throughput and loss, and the mask
check's speed. Prints figures; asserts nothing about speed.

Usage:
    python bench/spine.py            # the full demo config (examples/demo.yaml)
    python bench/spine.py --quick    # 4 training steps, for CI smoke runs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 steps instead of the demo's full schedule")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tunepack-bench-"))
    os.environ.setdefault("TUNEPACK_HOME", str(scratch / "home"))
    os.environ.setdefault("TRACKIO_DIR", str(scratch / "trackio"))

    import yaml

    from mcp_server.pipeline import run_pipeline
    from mcp_server.train.tiny_model import ensure_tiny_model
    from mcp_server.config import load_config

    cfg = yaml.safe_load((REPO / "examples" / "demo.yaml").read_text())
    cfg["data"]["path"] = str(REPO / "examples" / "data" / "agent_traces.jsonl")
    if args.quick:
        cfg["training"].update(max_steps=4, logging_steps=1, eval_steps=2)
    path = scratch / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))

    started = time.perf_counter()
    ensure_tiny_model(load_config(path))
    build_s = time.perf_counter() - started

    from transformers import AutoTokenizer

    from mcp_server.train import maskcheck

    model_dir = ensure_tiny_model(load_config(path))
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    from mcp_server.resources import chat_templates

    rows = [json.loads(line) for line in Path(cfg["data"]["path"]).read_text().splitlines()]
    started = time.perf_counter()
    template, label = maskcheck.resolve_chat_template(tokenizer, "model", "messages", "tiny:qwen3",
                                                      packaged=chat_templates())  # what the script picks
    maskcheck.check_dataset(tokenizer, rows, fmt="messages", chat_template=template,
                            template_label=label, max_length=cfg["training"]["max_length"])
    mask_s = time.perf_counter() - started

    result = run_pipeline(path)
    figures = {
        "mode": "quick" if args.quick else "full",
        "tiny_model_build_s": round(build_s, 2),
        "mask_check_rows_per_s": round(len(rows) / mask_s, 1),
        "pipeline_wall_s": result.wall_time_s,
        "steps": result.steps,
        "steps_per_s": round(result.steps / max(result.wall_time_s, 1e-9), 2),
        "first_loss": round(result.first_loss, 4),
        "last_loss": round(result.last_loss, 4),
    }
    for key, value in figures.items():
        print(f"{key:>24}: {value}")


if __name__ == "__main__":
    main()
