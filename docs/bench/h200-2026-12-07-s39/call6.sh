# Session 39, call 6: tile-walk with causal chunks skipped, chunks of 64 and 32 keys, on the
# attention cases and TinyLlama's layer at S=512 (eager and torch.compile in the same runs).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
F="--filter attention/tinyllama/S512,attention/qwen2.5-7b/S512,attention-shapes/d64/S1000/full,attention-shapes/d128/S2048/causal,attention-shapes/d64/S4096/causal,attention/tinyllama/S128,attention/qwen2.5-7b/S128"
for chunk in 64 32; do
  TW_CHUNK=$chunk DEPLODOCK_CACHE_DIR=/tmp/cache-c$chunk timeout 150 python3 docs/bench/h200-2026-12-07-s39/tilewalk.py \
    bench $F --budget 0.3 --rounds 3 --no-copy --no-gemm --out /tmp/c$chunk > $OUT/c$chunk.log 2>&1
  echo "chunk $chunk rc=$?"; grep -E "^\[|geomean overall" $OUT/c$chunk.log | cut -c1-200
done
DEPLODOCK_CACHE_DIR=/tmp/cache-c64 timeout 150 python3 docs/bench/h200-2026-12-07-s39/tilewalk.py \
  bench --filter layer/tinyllama/S512,layer/qwen2.5-7b/S128 --budget 0.3 --rounds 3 --no-copy --no-gemm --out /tmp/twl > $OUT/layer.log 2>&1
echo "layer rc=$?"; grep -E "^\[" $OUT/layer.log | cut -c1-200
