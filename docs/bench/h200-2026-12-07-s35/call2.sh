# Session 35, call 2 (written, not run: the session's device time went to refused starts):
# one full call for the next session, most needed first, each part bounded so the call
# fits 600 s, logs under $OUT.
# 1. The matmul sweep of the two S=512 projections the planner gets wrong (K splits of 3
#    and 6 with K padded, as the planner pads it), then gate/up at S=32 (6 splits picked,
#    unmeasured) and S=128, for the refit (`--check --fit`). Building is not the cost:
#    75 variants of a shape build in 23 s on two cores; sweep.json is written per shape.
# 2. The copy-rate variants of issue 19's misses (session 33's copyrate.py): softmax rows
#    of 196 KB staged with one block an SM, bmm/small's held fill, mm/tiny-k's thread tiles.
# 3. PDL with the implicit trigger on whole TinyLlama at S=128 (0.98x torch.compile).
S33=docs/bench/h200-2026-12-06-s33
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
timeout 170 python3 -m deplodock.bench.sweep --shape linear:512x5632x2048 \
  --shape linear:512x2048x2048 --shape linear:32x5632x2048 --shape linear:128x5632x2048 \
  --splits 1,2,3,4,6 --jobs 16 --out $OUT/sweep > $OUT/sweep.log 2>&1
echo "sweep rc=$?"; head -2 $OUT/sweep.log
grep -A5 "^==" $OUT/sweep/sweep.txt | cut -c1-90
timeout 200 python3 $S33/copyrate.py softmax_odd_4096x50257 bmm_small mm_tiny_k > $OUT/copyrate.log 2>&1
echo "copyrate rc=$?"; grep -v "^deplodock from" $OUT/copyrate.log | cut -c1-300
timeout 170 python3 $S33/pdl.py model/tinyllama/S128 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-420
