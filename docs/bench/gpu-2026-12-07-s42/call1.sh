# Session 42, call 1: matmuls on tensor cores (mma-contract tf32x3; the planner's tile and
# a forced 128 x 128 with K chunks of 16 and 32) vs the FMA schedule and eager (cuBLAS
# fp32, strict); then session 41's KVSPLIT attention timing (its call7).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 400 python3 docs/bench/gpu-2026-12-07-s42/mma.py proj/q/tinyllama/S512 \
  proj/gate-up/tinyllama/S512 proj/down/tinyllama/S512 proj/q/qwen2.5-7b/S128 \
  shapes/mm/even shapes/linear/even shapes/mm/prime > $OUT/mma.log 2>&1
echo "mma rc=$?"; cut -c1-400 $OUT/mma.log | tail -20
timeout 150 python3 docs/bench/gpu-2026-12-07-s41/tc/fatc.py > $OUT/fatc.log 2>&1
echo "fatc rc=$?"; cut -c1-200 $OUT/fatc.log
