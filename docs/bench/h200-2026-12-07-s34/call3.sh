# Session 34, call 3 (written, not run: the device time was spent): what the next session
# should measure first, in one H200 call.
# 1. PDL with the implicit trigger (the wait alone first in every kernel), on and off.
# 2. The matmul sweep with K splits of 3 and 6, for refitting the cost model (the
#    planner's picks at S=512 were 9% off on the gate and q: session 34's splits.py).
# Before/after of the five bench cases the split counts change is call2.sh (it needs
# .whl/old built from 85f02b5 and .whl/new from HEAD).
S33=docs/bench/h200-2026-12-06-s33
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
timeout 200 python3 $S33/pdl.py layer/tinyllama/S128 model/tinyllama/S128 \
  layer/qwen2.5-7b/S128 layer/tinyllama/S512 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-420
timeout 330 python3 -m deplodock.bench.sweep --shape linear:512x5632x2048 \
  --shape linear:512x2048x2048 --shape linear:128x5632x2048 --shape linear:32x5632x2048 \
  --splits 1,2,3,4,6 --out $OUT/sweep > $OUT/sweep.log 2>&1
echo "sweep rc=$?"; tail -40 $OUT/sweep.log
