# Session 38, call 2. Always: the K split of the gate combined inside the kernel, now also
# by the last-arriving block of each tile (cluster/cluster.py: `ticket`), beside the pair.
# On an H200: issue 19's `shapes` group at HEAD (its bars are the H200's). On an H100:
# PDL on/off (implicit trigger) on the layers and rmsnorm/attention (s33 pdl.py; whole
# TinyLlama at S=128 was timed in call 1: 1.008x, as in session 36).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 60 python3 docs/bench/h200-2026-12-07-s38/cluster/cluster.py > $OUT/cluster.log 2>&1
echo "cluster rc=$?"; cat $OUT/cluster.log | cut -c1-200
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 430 python3 -m deplodock.cli bench --filter shapes --budget 0.3 --rounds 3 \
    --out $OUT/shapes > $OUT/shapes.log 2>&1
  echo "shapes rc=$?"; grep -E "^\[|geomean" $OUT/shapes.log | cut -c1-230
else
  timeout 300 python3 docs/bench/h200-2026-12-06-s33/pdl.py rmsnorm/tinyllama/S128 \
    attention/tinyllama/S128 layer/tinyllama/S128 layer/qwen2.5-7b/S128 layer/tinyllama/S512 \
    > $OUT/pdl.log 2>&1
  echo "pdl rc=$?"; cut -c1-300 $OUT/pdl.log
fi
