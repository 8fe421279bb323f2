# Session 38, call 4 (not run: the session's device time was spent; for the next session,
# about 4 minutes): the hand-written register-tiled attention walk (fa/fa.py: block shapes,
# K and V chunks loaded plainly or double-buffered by cp.async, each output checked against
# eager and timed beside it), then the compiler's attention on the same cases
# (`deplodock bench`, eager and torch.compile in the same run); then the gate kernel with
# its prefetch loads pinned, preceded by L2 prefetches two chunks ahead, or under a branch
# (pin/pin.py: with the branch ptxas issues all 4 loads at the top of the chunk, with the
# L2 prefetch 3 of them, not ~760 instructions in), timed against the kernel as generated
# (session 37's hand.py).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 docs/bench/h200-2026-12-07-s38/fa/fa.py > $OUT/fa.log 2>&1
echo "fa rc=$?"; cut -c1-200 $OUT/fa.log
F=attention-shapes/d128/S2048/causal,attention-shapes/d64/S1000/full,attention-shapes/d64/S4096/causal,attention/tinyllama/S512
timeout 200 python3 -m deplodock.cli bench --filter $F --budget 0.3 --rounds 3 --no-copy \
  --no-gemm --out /tmp/att > $OUT/bench.log 2>&1
echo "bench rc=$?"; grep -E "^\[" $OUT/bench.log | cut -c1-220
(cd docs/bench/h200-2026-12-07-s38/pin && python3 pin.py && timeout 80 python3 \
  ../../h200-2026-12-07-s37/hand/hand.py g_prefetch.cu p_pinned.cu p_l2.cu p_guard.cu > $OUT/pin.log 2>&1
  echo "pin rc=$?"; cut -c1-200 $OUT/pin.log)
