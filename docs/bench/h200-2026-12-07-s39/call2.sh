# Session 39, call 2: the hand attention walk's variants the compiler could generate (fa/fa.py:
# each key's probabilities by __shfl_sync from the lane that computed them instead of through
# shared memory; the head-dim loop fully unrolled as the emitter unrolls it), each checked
# against eager; then the gate-up S512 with L2 prefetches two chunks ahead (pin/l2ahead.py).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
S=docs/bench/h200-2026-12-07-s38
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 200 python3 $S/fa/fa.py > $OUT/fa.log 2>&1
echo "fa rc=$?"; cut -c1-200 $OUT/fa.log
F="--filter proj/gate-up/tinyllama/S512"
for run in planned l2ahead; do
  C="$S/pin/$run.py"; [ $run = planned ] && C="-m deplodock.cli"
  DEPLODOCK_CACHE_DIR=/tmp/cache-$run timeout 100 python3 $C bench $F --budget 0.3 --rounds 5 \
    --no-copy --no-gemm --out /tmp/$run > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep -E "^\[" $OUT/$run.log | cut -c1-200
done
