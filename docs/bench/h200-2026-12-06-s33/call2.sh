# Session 33, call 2 (one call: device time was short): GPU tests with programmatic
# dependent launch on (the default); PDL on and off (pdl.py); the copy-rate variants and
# the held fills against the strided ones (copyrate.py).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
timeout 120 python3 -m pytest -p no:cacheprovider -m gpu -q test/test_pdl.py test/test_cuda_backend.py \
  test/test_executor.py test/test_large_slabs.py test/test_vectorize.py test/test_softmax_sum.py \
  test/test_seed_examples.py "test/test_matmul_schedule.py::test_every_candidate_tile_matches_torch_on_the_gpu" \
  > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -4 $OUT/gpu_tests.log
timeout 170 python3 docs/bench/h200-2026-12-06-s33/pdl.py rmsnorm/tinyllama/S128 attention/tinyllama/S128 \
  layer/tinyllama/S128 model/tinyllama/S128 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-400
timeout 150 python3 docs/bench/h200-2026-12-06-s33/copyrate.py bmm_small \
  rmsnorm/large/4096x4096 shapes/layernorm/odd shapes/rmsnorm/odd attention/tinyllama/S32 softmax_odd_4096x50257 \
  > $OUT/copyrate.log 2>&1
echo "copyrate rc=$?"; cat $OUT/copyrate.log | cut -c1-400
