# Session 39, call 7: HEAD with tile-walk planned by default: the attention and
# attention-shapes groups, the four decoder layers (eager and torch.compile in the same
# runs), then every GPU test.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 -m deplodock.cli bench --filter attention,attention-shapes --budget 0.3 \
  --rounds 3 --no-copy --no-gemm --out $OUT/att > $OUT/att.log 2>&1
echo "att rc=$?"; grep -E "^\[|geomean" $OUT/att.log | cut -c1-200
timeout 160 python3 -m deplodock.cli bench --filter layer --budget 0.3 --rounds 3 --no-copy \
  --no-gemm --out $OUT/layer > $OUT/layer.log 2>&1
echo "layer rc=$?"; grep -E "^\[|geomean" $OUT/layer.log | cut -c1-200
timeout 250 python3 -m pytest -p no:cacheprovider -m gpu -q -x test/ > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -5 $OUT/gpu_tests.log | cut -c1-300
