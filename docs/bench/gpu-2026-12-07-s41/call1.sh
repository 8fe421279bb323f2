# Session 41, call 1: session 40's call 3 (the attention groups at HEAD; tile-walk{merge=select}
# on three cases; TinyLlama's S=512 layer; the hand kernel's variants 0, 3, 7, 9), then
# plan_shapes.py (the planner against the lane-split walk and eager on ten other shapes).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 120 python3 -m deplodock.cli bench --filter attention,attention-shapes --budget 0.3 \
  --rounds 3 --no-copy --no-gemm --out $OUT/att > $OUT/att.log 2>&1
echo "att rc=$?"; grep -E "^\[|geomean" $OUT/att.log | cut -c1-200
F="--filter attention/tinyllama/S512,attention-shapes/d128/S2048/causal,attention-shapes/d64/S1000/full"
TW_ROWS=0 TW_MERGE=select DEPLODOCK_CACHE_DIR=/tmp/cache-sel timeout 60 python3 \
  docs/bench/h200-2026-12-07-s39/tilewalk.py bench $F --budget 0.3 --rounds 3 --no-copy \
  --no-gemm --out /tmp/sel > $OUT/sel.log 2>&1
echo "merge=select rc=$?"; grep -E "^\[" $OUT/sel.log | cut -c1-200
timeout 100 python3 -m deplodock.cli bench --filter layer/tinyllama/S512 --kernels \
  --budget 0.3 --rounds 3 --no-copy --no-gemm --out $OUT/layer > $OUT/layer.log 2>&1
echo "layer rc=$?"; grep -E "^\[" $OUT/layer.log | cut -c1-200; cat $OUT/layer/results.md | tail -40
[ -n "$WITH_FA40" ] && FA40_ONLY=0,3,7,9 timeout 40 python3 docs/bench/h200-2026-12-07-s40/fa40.py > $OUT/fa40.log 2>&1
echo "fa40 rc=$?"; cat $OUT/fa40.log
timeout 130 python3 docs/bench/h200-2026-12-07-s40/plan_shapes.py > $OUT/plan_shapes.log 2>&1
echo "plan_shapes rc=$?"; cut -c1-300 $OUT/plan_shapes.log
