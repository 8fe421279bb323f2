#!/usr/bin/env bash
# One resumable slice of the every-sample OpInfo run through deplodock.compile on the H200
# (session 8). Run from the repository root on the GPU machine, with the wheels installed:
#   bash docs/bench/h200-2026-12-02-s8/gpu_opinfo.sh DTYPE DEADLINE_S
# Results accumulate in docs/bench/h200-2026-12-02-s8/opinfo-cuda-DTYPE.jsonl (copied to
# $OUT with the table); a later call with the file carried back resumes where it stopped.
set -uo pipefail
dtype=${1:-float32}
deadline=${2:-420}
here=docs/bench/h200-2026-12-02-s8
results=$here/opinfo-cuda-$dtype.jsonl
touch "$results"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__)"
python3 -m deplodock.opinfo --device cuda --dtype "$dtype" --samples 0 --jobs 14 \
  --timeout 120 --deadline "$deadline" --results "$results" \
  --out "$OUT/opinfo-cuda-$dtype.md" 2> "$OUT/opinfo-cuda-$dtype.stderr"
cp "$results" "$OUT/"
tail -3 "$OUT/opinfo-cuda-$dtype.stderr"
