# Session 41, call 3: the 3xTF32 tensor-core attention written by hand (tc/fatc.py: block
# shapes against eager, each output checked), then on an H200 issue 19's `shapes` group,
# on an H100 call1.sh without the hand SIMT kernel's variants.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 docs/bench/gpu-2026-12-07-s41/tc/fatc.py > $OUT/fatc.log 2>&1
echo "fatc rc=$?"; cut -c1-200 $OUT/fatc.log
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 360 python3 -m deplodock.cli bench --filter shapes --budget 0.3 --rounds 3 \
    --out $OUT/shapes > $OUT/shapes.log 2>&1
  echo "shapes rc=$?"; grep -E "^\[|geomean" $OUT/shapes.log | cut -c1-230
else
  bash docs/bench/gpu-2026-12-07-s41/call1.sh
fi
