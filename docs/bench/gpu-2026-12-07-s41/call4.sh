# Session 41, call 4: the tensor-core attention with the cheap split and exp2 (tc/fatc.py,
# call 3's kernel beside it), a call's host cost (overhead.py), then on an H200 issue 19's
# `shapes` group, on an H100 TinyLlama's S=512 layer kernel by kernel (call 3's table lost
# its deplodock half to the output's length).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 docs/bench/gpu-2026-12-07-s41/tc/fatc.py > $OUT/fatc.log 2>&1
echo "fatc rc=$?"; cut -c1-200 $OUT/fatc.log
timeout 120 python3 docs/bench/gpu-2026-12-07-s41/overhead.py > $OUT/overhead.log 2>&1
echo "overhead rc=$?"; grep -E "^==|tottime|^ +[0-9]" $OUT/overhead.log | cut -c1-160 | head -45
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 300 python3 -m deplodock.cli bench --filter shapes --budget 0.3 --rounds 3 \
    --out $OUT/shapes > $OUT/shapes.log 2>&1
  echo "shapes rc=$?"; grep -E "^\[|geomean" $OUT/shapes.log | cut -c1-230
else
  timeout 100 python3 -m deplodock.cli bench --filter layer/tinyllama/S512 --kernels \
    --budget 0.3 --rounds 3 --no-copy --no-gemm --out $OUT/layer > $OUT/layer.log 2>&1
  echo "layer rc=$?"; grep -E "^\[" $OUT/layer.log | cut -c1-200
  sed -n '/^### /,$p' $OUT/layer/results.md | head -22
fi
