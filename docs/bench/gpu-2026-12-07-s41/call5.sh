# Session 41, call 5: the tensor-core attention with Q split once as staged (tc/fatc.py),
# a compiled call's host cost before (.whl/old: 34911ab) and after the fast path
# (overhead.py, both in this run), the GPU tests of the call path; on an H200 issue 19's
# `shapes` group.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site_old .whl/old/*.whl .whl/xdsl*.whl .whl/immutabledict*.whl .whl/ordered_set*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 docs/bench/gpu-2026-12-07-s41/tc/fatc.py > $OUT/fatc.log 2>&1
echo "fatc rc=$?"; cut -c1-200 $OUT/fatc.log
PYTHONPATH=/tmp/site_old timeout 100 python3 docs/bench/gpu-2026-12-07-s41/overhead.py > $OUT/overhead_old.log 2>&1
echo "overhead (old) rc=$?"; grep -E "^==|GPU work" $OUT/overhead_old.log | cut -c1-250
timeout 100 python3 docs/bench/gpu-2026-12-07-s41/overhead.py > $OUT/overhead.log 2>&1
echo "overhead (new) rc=$?"; grep -E "^==|GPU work" $OUT/overhead.log | cut -c1-250
grep -E "tottime|^ +[0-9]" $OUT/overhead.log | cut -c1-150 | head -14
timeout 150 python3 -m pytest -p no:cacheprovider -m gpu -q test/test_api.py test/test_executor.py test/test_cuda_backend.py > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -3 $OUT/gpu_tests.log | cut -c1-300
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 300 python3 -m deplodock.cli bench --filter shapes --budget 0.3 --rounds 3 \
    --out $OUT/shapes > $OUT/shapes.log 2>&1
  echo "shapes rc=$?"; grep -E "^\[|geomean" $OUT/shapes.log | cut -c1-230
fi
