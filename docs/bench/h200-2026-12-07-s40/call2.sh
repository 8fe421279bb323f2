# Session 40, call 2 (ordered by priority; the session's device time was short):
# (1) the attention groups at HEAD (tile-walk unrolled 8 deep by default, the batch
# weight's select before the exp); (2) the two S=512 decoder layers; (3) the hand kernel's
# merge without a branch and the batch weight's select before the exp (fa40.py variants
# 0, 2, 3, 7-9); (4) plan_shapes.py: the planner against the lane-split walk on ten other
# shapes; (5) tile-walk unrolled 16 deep on two cases; tile-walk{merge=select} on three;
# (6) the attention GPU tests.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 130 python3 -m deplodock.cli bench --filter attention,attention-shapes --budget 0.3 \
  --rounds 3 --no-copy --no-gemm --out $OUT/att > $OUT/att.log 2>&1
echo "att rc=$?"; grep -E "^\[|geomean" $OUT/att.log | cut -c1-200
timeout 120 python3 -m deplodock.cli bench --filter layer/tinyllama/S512,layer/qwen2.5-7b/S512 \
  --budget 0.3 --rounds 3 --no-copy --no-gemm --out $OUT/layer > $OUT/layer.log 2>&1
echo "layer rc=$?"; grep -E "^\[" $OUT/layer.log | cut -c1-200
FA40_ONLY=0,2,3,7,8,9 timeout 60 python3 docs/bench/h200-2026-12-07-s40/fa40.py > $OUT/fa40.log 2>&1
echo "fa40 rc=$?"; cat $OUT/fa40.log
F="--filter attention/tinyllama/S512,attention-shapes/d128/S2048/causal"
TW_ROWS=0 TW_UNROLL=16 DEPLODOCK_CACHE_DIR=/tmp/cache-u16 timeout 60 python3 \
  docs/bench/h200-2026-12-07-s39/tilewalk.py bench $F --budget 0.3 --rounds 3 --no-copy \
  --no-gemm --out /tmp/u16 > $OUT/u16.log 2>&1
echo "unroll 16 rc=$?"; grep -E "^\[" $OUT/u16.log | cut -c1-200
F="$F,attention-shapes/d64/S1000/full"
TW_ROWS=0 TW_MERGE=select DEPLODOCK_CACHE_DIR=/tmp/cache-sel timeout 70 python3 \
  docs/bench/h200-2026-12-07-s39/tilewalk.py bench $F --budget 0.3 --rounds 3 --no-copy \
  --no-gemm --out /tmp/sel > $OUT/sel.log 2>&1
echo "merge=select rc=$?"; grep -E "^\[" $OUT/sel.log | cut -c1-200
timeout 130 python3 docs/bench/h200-2026-12-07-s40/plan_shapes.py > $OUT/plan_shapes.log 2>&1
echo "plan_shapes rc=$?"; cat $OUT/plan_shapes.log | cut -c1-300
timeout 80 python3 -m pytest -p no:cacheprovider -m gpu -q -k "attention or walk or share" test/ > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -3 $OUT/gpu_tests.log | cut -c1-300
