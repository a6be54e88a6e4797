"""What the live package index would give each rendered job header, against the fixed day the tests resolve on.

The tests resolve job headers on the index as it was on TUNEPACK_RESOLVE_BEFORE (tests/conftest.py), so a new
release cannot turn CI red overnight; this is the separate live check: each header tunepack renders (SFT, GRPO,
GRPO with vLLM, distillation, the eval job, the eval job on vLLM) resolved for the HF job's platform (uv, Linux
x86_64, Python 3.12) on that day and today, the versions that matter side by side, and every one that moved.
A header that resolves today outside TRL's vLLM range, or not at all, is printed as a problem. Prints; exits 0.

Usage:
    python bench/resolve_drift.py            # every header
    python bench/resolve_drift.py --quick    # the SFT header only (CI smoke)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
FIXED = "2026-12-05T00:00:00Z"  # keep equal to tests/conftest.py's TUNEPACK_RESOLVE_BEFORE


def headers(folder: Path, quick: bool) -> dict[str, list[str]]:
    """name -> the dependencies of that rendered header."""
    import yaml

    from mcp_server.config import load_config
    from mcp_server.evals.render import eval_pins
    from mcp_server.jobs.resolve import header_dependencies
    from mcp_server.methods import render_script

    data = folder / "rows.jsonl"
    data.write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n')
    prompts = folder / "prompts.jsonl"
    prompts.write_text('{"prompt": [{"role": "user", "content": "Write f."}], "tests": ["assert f() == 1"]}\n')
    variants = {"sft": {}, "grpo": {"training": {"method": "grpo"}, "data": {"path": str(prompts)}, "grpo": {"num_generations": 4}},
                "grpo+vllm": {"training": {"method": "grpo"}, "data": {"path": str(prompts)},
                              "grpo": {"generation": "vllm", "num_generations": 4}},
                "distill": {"training": {"method": "distill"}, "teacher": {"name": "Qwen/Qwen3-4B"}}}
    out = {}
    for name, extra in list(variants.items())[:1 if quick else None]:
        raw = {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": str(data)}, **extra}
        if "data" in extra:
            raw["data"] = extra["data"]
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(raw))
        out[name] = header_dependencies(render_script(load_config(path)))
    if not quick:
        out["eval"] = eval_pins("hf")
        out["eval+vllm"] = eval_pins("vllm")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the SFT header only")
    args = parser.parse_args()
    os.environ.pop("TUNEPACK_RESOLVE_BEFORE", None)
    from mcp_server.jobs.resolve import JOB_PLATFORM, JOB_PYTHON, SHOWN, resolve
    from mcp_server.methods.grpo import VLLM_FOR_TRL

    within = {"vllm": VLLM_FOR_TRL.removeprefix("vllm")}
    with tempfile.TemporaryDirectory() as tmp:
        found = headers(Path(tmp), args.quick)
    print(f"job headers resolved for {JOB_PLATFORM} / Python {JOB_PYTHON}: the index on {FIXED} vs today")
    moved = problems = 0
    for name, deps in found.items():
        fixed = resolve(deps, exclude_newer=FIXED, within=within if name.startswith("grpo") else None)
        live = resolve(deps, exclude_newer=None, within=within if name.startswith("grpo") else None)
        cells = []
        for package in SHOWN:
            a, b = fixed.versions.get(package), live.versions.get(package)
            if a or b:
                cells.append(f"{package} {a}" if a == b else f"{package} {a} -> {b} (MOVED)")
                moved += a != b
        print(f"- {name}: " + ", ".join(cells))
        for label, got in (("fixed day", fixed), ("today", live)):
            if got.ok is not True:
                problems += 1
                print(f"    {label}: {'not checked' if got.ok is None else 'PROBLEM'}: {got.problem}")
    print(f"{moved} version(s) moved, {problems} problem(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
