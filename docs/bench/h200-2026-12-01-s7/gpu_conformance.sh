#!/usr/bin/env bash
# Session 7 on the H200 (issue 16): OpInfo through deplodock.compile on CUDA and the user
# blocks of test/gpu/core_aten_check.py. Run from the repository root on the GPU machine,
# after the wheels are installed (see the README); logs under $OUT.
#   gpu_conformance.sh blocks float32        # the blocks, then fp32 OpInfo
#   gpu_conformance.sh bfloat16 float16      # 16-bit OpInfo
set -u
out=${OUT:-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 DEPLODOCK_CACHE_DIR=/tmp/deplodock-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$out/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__)" | tee -a "$out/gpu.txt"
for what in "$@"; do
  if [ "$what" = blocks ]; then
    python3 test/gpu/core_aten_check.py 2>&1 | grep -v Warning | tee "$out/blocks.txt"
    continue
  fi
  samples=3; [ "$what" = float32 ] || samples=2
  timeout 330 python3 -m deplodock.opinfo --device cuda --jobs 14 --samples $samples \
    --dtype "$what" --timeout 60 --out "$out/opinfo-cuda-$what.md" \
    --json "$out/opinfo-cuda-$what.json" 2>&1 | grep -v Warning | tail -3 \
    | tee -a "$out/opinfo-summary.txt"
done
