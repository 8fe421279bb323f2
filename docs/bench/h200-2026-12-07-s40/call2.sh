# Session 40, call 2: (1) the hand kernel's merge without a branch and the batch weight's
# select before the exp (fa40.py variants 0, 2, 3, 7-9); (2) the attention groups at HEAD
# (tile-walk unrolled 8 deep by default, the batch weight's select before the exp), and
# unrolled 16 deep (tilewalk.py, TW_UNROLL=16) on the five cases the walk takes;
# (3) plan_shapes.py: the planner against the lane-split walk on ten other shapes.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
FA40_ONLY=0,2,3,7,8,9 timeout 100 python3 docs/bench/h200-2026-12-07-s40/fa40.py > $OUT/fa40.log 2>&1
echo "fa40 rc=$?"; cat $OUT/fa40.log
timeout 150 python3 -m deplodock.cli bench --filter attention,attention-shapes --budget 0.3 \
  --rounds 3 --no-copy --no-gemm --out $OUT/att > $OUT/att.log 2>&1
echo "att rc=$?"; grep -E "^\[|geomean" $OUT/att.log | cut -c1-200
F="--filter attention/tinyllama/S512,attention/qwen2.5-7b/S512,attention-shapes/d64/S1000/full,attention-shapes/d128/S2048/causal,attention-shapes/d64/S4096/causal"
TW_ROWS=0 TW_UNROLL=16 DEPLODOCK_CACHE_DIR=/tmp/cache-u16 timeout 100 python3 \
  docs/bench/h200-2026-12-07-s39/tilewalk.py bench $F --budget 0.3 --rounds 3 --no-copy \
  --no-gemm --out /tmp/u16 > $OUT/u16.log 2>&1
echo "unroll 16 rc=$?"; grep -E "^\[|geomean overall" $OUT/u16.log | cut -c1-200
timeout 200 python3 docs/bench/h200-2026-12-07-s40/plan_shapes.py > $OUT/plan_shapes.log 2>&1
echo "plan_shapes rc=$?"; cat $OUT/plan_shapes.log | cut -c1-300
