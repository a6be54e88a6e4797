#!/usr/bin/env bash
# The prepared GPU check for Gemma 4 (issue [11]): a Gemma-4-E2B-shaped random model built from its
# published configuration (no download), 30 QLoRA steps of the rendered script on converted agent
# sessions, then HumanEval on 5 problems for base and base + adapter (vllm/<base>:<adapter> when vLLM is
# installed). Prints tokens/s, peak GPU memory and the eval table; meant to finish in under 8 minutes
# on one GPU (timeout 540 s). Needs no network: install first with
#   pip install torch && pip install -e '.[train,eval]' vllm && pip install --no-deps bfcl-eval==2026.3.23
# or, on a machine with no registry, carry the wheels its image lacks: python bench/gpu_bundle.py (here).
# Usage: bash bench/gpu_check.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu_check: no CUDA GPU visible to $PYTHON; on CPU run: $PYTHON bench/gpu_check.py --quick" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader || true
# the lent GPU machine has no package registry: bench/gpu_bundle.py carries the wheels its image lacks
if [ -f bench/.gpu-wheels/requirements.txt ]; then
  "$PYTHON" -m pip install --quiet --no-index --no-deps --find-links bench/.gpu-wheels -r bench/.gpu-wheels/requirements.txt
fi
"$PYTHON" -m pip list --format=json > "${TMPDIR:-/tmp}/tunepack-gpu-image.json" 2>/dev/null || true
exec timeout 540 "$PYTHON" bench/gpu_check.py "$@"
