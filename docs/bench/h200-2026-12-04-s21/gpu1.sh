# Session 21, call 1: head dim 1024 as one walk of 32 lanes; fused walks split across
# blocks by keys (chunk-reduce with the query row cloned); the GPU tests of the walks.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
timeout -s KILL 120 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:logging -rA test/test_softmax_sum.py 2>&1 | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|^E  " | tee $OUT/gpu_tests.log
cd /tmp
timeout 400 python3 $R/docs/bench/h200-2026-12-04-s21/attention.py 2>&1 | grep -v "^deplodock from" | tee $OUT/variants.log
