#!/usr/bin/env bash
# The GPU throughput table (issue [13]): Qwen3-1.7B- and Gemma-4-E2B-shaped random models built from their
# configurations (no download), LoRA-bf16 and QLoRA, the rendered script vs TRL's SFTTrainer defaults:
# trained tokens/s, peak memory, MFU. Under 8 minutes on one GPU. Install first (no network needed after):
#   pip install torch && pip install -e '.[train]'
# On a machine with no registry, carry the wheels its image lacks: python bench/gpu_bundle.py (here).
# Usage: bash bench/gpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu.sh: no CUDA GPU visible to $PYTHON; on CPU run: $PYTHON bench/gpu.py --quick" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader || true
# the lent GPU machine has no package registry: bench/gpu_bundle.py carries the wheels its image lacks
if [ -f bench/.gpu-wheels/requirements.txt ]; then
  "$PYTHON" -m pip install --quiet --no-index --no-deps --find-links bench/.gpu-wheels -r bench/.gpu-wheels/requirements.txt
fi
"$PYTHON" -m pip list --format=json > "${TMPDIR:-/tmp}/tunepack-gpu-image.json" 2>/dev/null || true
exec timeout 540 "$PYTHON" bench/gpu.py "$@"
