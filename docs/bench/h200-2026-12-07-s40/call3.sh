# Session 40, call 3 (call 2 cut to fit the device time refused starts left): the
# attention groups at HEAD (unroll 8, the batch weight's select before the exp);
# tile-walk{merge=select} on three cases; TinyLlama's S=512 layer; the hand kernel's
# branch-free merge and select-first weight (fa40.py variants 0, 3, 7, 9).
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
timeout 80 python3 -m deplodock.cli bench --filter layer/tinyllama/S512 \
  --budget 0.3 --rounds 3 --no-copy --no-gemm --out $OUT/layer > $OUT/layer.log 2>&1
echo "layer rc=$?"; grep -E "^\[" $OUT/layer.log | cut -c1-200
FA40_ONLY=0,3,7,9 timeout 40 python3 docs/bench/h200-2026-12-07-s40/fa40.py > $OUT/fa40.log 2>&1
echo "fa40 rc=$?"; cat $OUT/fa40.log
