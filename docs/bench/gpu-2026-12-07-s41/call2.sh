# Session 41, call 2: on an H200, issue 19's `shapes` group and the attention groups at HEAD
# (both issues' bars are the H200's; no H200 has been lent since session 36); on an H100,
# call1.sh (the attention groups, merge=select, TinyLlama's S=512 layer, fa40, plan_shapes).
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash docs/bench/gpu-2026-12-07-s41/call1.sh
fi
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 380 python3 -m deplodock.cli bench --filter shapes --budget 0.3 --rounds 3 \
  --out $OUT/shapes > $OUT/shapes.log 2>&1
echo "shapes rc=$?"; grep -E "^\[|geomean" $OUT/shapes.log | cut -c1-230
timeout 150 python3 -m deplodock.cli bench --filter attention,attention-shapes --budget 0.3 \
  --rounds 3 --no-copy --no-gemm --out $OUT/att > $OUT/att.log 2>&1
echo "att rc=$?"; grep -E "^\[|geomean" $OUT/att.log | cut -c1-200
