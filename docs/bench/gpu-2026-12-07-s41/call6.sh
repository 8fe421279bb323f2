# Session 41, call 6: on an H200 issue 19's `shapes` group; on an H100 the decoder layers
# and whole TinyLlama at S=128 at HEAD (issue 20's layer and model bars).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 330 python3 -m deplodock.cli bench --filter shapes --budget 0.3 --rounds 3 \
    --out $OUT/shapes > $OUT/shapes.log 2>&1
  echo "shapes rc=$?"; grep -E "^\[|geomean" $OUT/shapes.log | cut -c1-230
else
  timeout 240 python3 -m deplodock.cli bench --filter layer,model/tinyllama \
    --budget 0.3 --rounds 3 --no-copy --no-gemm --out $OUT/layers > $OUT/layers.log 2>&1
  echo "layers rc=$?"; grep -E "^\[|geomean" $OUT/layers.log | cut -c1-230
fi
