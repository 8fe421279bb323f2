# Session 42, call 3: call 2 again after the emitter keeps a K chunk's tensor-core sums apart
# (accumulators of its own, added once a chunk): accuracy and time, same four cases.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
MMA_VARIANTS="fma,tc,tc 128x128 k32" timeout 300 python3 docs/bench/gpu-2026-12-07-s42/mma.py \
  proj/q/tinyllama/S512 proj/gate-up/tinyllama/S512 shapes/mm/even shapes/linear/even \
  > $OUT/mma.log 2>&1
echo "mma rc=$?"; cut -c1-400 $OUT/mma.log | tail -20
