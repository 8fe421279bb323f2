# Session 39, call 5: the register-tiled walk the compiler now builds (tile-walk, opt-in:
# tilewalk.py turns it on with TW_ROWS rows a block) against the planner's walk, on the
# attention cases and TinyLlama's layer at S=512; eager and torch.compile in the same runs.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
F="--filter attention/tinyllama/S512,attention/qwen2.5-7b/S512,attention-shapes/d64/S1000/full,attention-shapes/d128/S2048/causal,attention-shapes/d64/S4096/causal,attention/tinyllama/S128"
for run in planned tw64 tw32; do
  C="docs/bench/h200-2026-12-07-s39/tilewalk.py"; [ $run = planned ] && C="-m deplodock.cli"
  [ $run = tw32 ] && export TW_ROWS=32
  DEPLODOCK_CACHE_DIR=/tmp/cache-$run timeout 150 python3 $C bench $F --budget 0.3 --rounds 3 \
    --no-copy --no-gemm --out /tmp/$run > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep -E "^\[|geomean overall" $OUT/$run.log | cut -c1-200
done
unset TW_ROWS
DEPLODOCK_CACHE_DIR=/tmp/cache-tw64 timeout 120 python3 docs/bench/h200-2026-12-07-s39/tilewalk.py \
  bench --filter layer/tinyllama/S512 --budget 0.3 --rounds 3 --no-copy --no-gemm --out /tmp/twl > $OUT/layer.log 2>&1
echo "layer rc=$?"; grep -E "^\[" $OUT/layer.log | cut -c1-200
