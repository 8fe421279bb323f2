# Session 35, call 1: the matmul sweep with K splits of 3 and 6 (K padded with zeros to
# the split's chunks, as the planner pads it: the sweep now offers such splits), for
# refitting the cost model (K_EDGE_COST among its constants). Shapes in order of need:
# the two S=512 projections the planner gets wrong, then S=32 (6 splits, unmeasured).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
timeout 160 python3 -m deplodock.bench.sweep --shape linear:512x5632x2048 \
  --shape linear:512x2048x2048 \
  --splits 1,2,3,4,6 --jobs 16 --out $OUT/sweep > $OUT/sweep.log 2>&1
echo "sweep rc=$?"; head -2 $OUT/sweep.log
grep -A5 "^==" $OUT/sweep/sweep.txt | cut -c1-90
