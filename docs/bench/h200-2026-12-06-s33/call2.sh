# Session 33, call 2 (one short call: device time was short): GPU tests with programmatic
# dependent launch on (the default); PDL on and off (pdl.py); the held fills against the
# strided ones (copyrate.py).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
DEPLODOCK_PDL=1 timeout 90 python3 -m pytest -p no:cacheprovider -m gpu -q test/test_pdl.py test/test_cuda_backend.py \
  test/test_executor.py test/test_vectorize.py test/test_large_slabs.py > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -4 $OUT/gpu_tests.log
timeout 150 python3 docs/bench/h200-2026-12-06-s33/pdl.py rmsnorm/tinyllama/S128 \
  layer/tinyllama/S128 model/tinyllama/S128 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-400
timeout 100 python3 docs/bench/h200-2026-12-06-s33/copyrate.py bmm_small \
  rmsnorm/large/4096x4096 shapes/rmsnorm/odd > $OUT/copyrate.log 2>&1
echo "copyrate rc=$?"; cat $OUT/copyrate.log | cut -c1-400
