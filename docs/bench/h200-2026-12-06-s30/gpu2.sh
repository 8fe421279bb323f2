# Session 30, call 2: the packed stores as planned (stores = 4 only where a product is
# bound by its output): the GPU tests of test_vectorize.py (products of K = 16, edge
# tiles, rows 2039 apart, against torch), then the bench case whose CUDA changed
# (shapes/mm/tiny-k, the only one of 120) timed against eager and torch.compile.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader
timeout -s KILL 90 python3 -m pytest -m gpu -p no:cacheprovider -rA -W ignore test/test_vectorize.py > $OUT/gpu_tests.log 2>&1
grep -E "^(FAILED|ERROR|PASSED)|passed|failed" $OUT/gpu_tests.log | tail -8
timeout 100 deplodock bench --filter shapes/mm/tiny-k --budget 0.3 --rounds 5 --no-gemm --out $OUT/bench 2>&1 | grep -v DEBUG | tail -12
