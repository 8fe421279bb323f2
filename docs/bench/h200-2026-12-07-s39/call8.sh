# Session 39, call 8 (not run: the session's device time was spent; for the next session,
# about 7 minutes): (1) the two S=512 decoder layers at HEAD, after the fix that keeps the
# other walk passes off tile-walk's kernel (calls 6-7 timed them with chunk-walk's wrap);
# (2) tile-walk's score and P V loops unrolled 4 and 8 deep (tilewalk.py, TW_ROWS=0: the
# planner's rows and chunks) against the default, on the attention cases it takes.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 170 python3 -m deplodock.cli bench --filter layer/tinyllama/S512,layer/qwen2.5-7b/S512 \
  --budget 0.3 --rounds 3 --no-copy --no-gemm --out $OUT/layer > $OUT/layer.log 2>&1
echo "layer rc=$?"; grep -E "^\[" $OUT/layer.log | cut -c1-200
F="--filter attention/tinyllama/S512,attention/qwen2.5-7b/S512,attention-shapes/d64/S1000/full,attention-shapes/d128/S2048/causal,attention-shapes/d64/S4096/causal"
for u in 0 4 8; do
  TW_ROWS=0 TW_UNROLL=$u DEPLODOCK_CACHE_DIR=/tmp/cache-u$u timeout 120 python3 \
    docs/bench/h200-2026-12-07-s39/tilewalk.py bench $F --budget 0.3 --rounds 3 --no-copy \
    --no-gemm --out /tmp/u$u > $OUT/u$u.log 2>&1
  echo "unroll $u rc=$?"; grep -E "^\[|geomean overall" $OUT/u$u.log | cut -c1-200
done
