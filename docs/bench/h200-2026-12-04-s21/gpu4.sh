# Session 21, call 4: S=1000 with its parts merged on lanes; causal walks launched longest
# rows first (a variant); decode of head dim 64 split by keys against whole; the GPU tests.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
timeout -s KILL 120 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:logging -rA test/test_softmax_sum.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed|^E  " | tee $OUT/gpu_tests.log
cd /tmp
CALL=4 timeout 420 python3 $R/docs/bench/h200-2026-12-04-s21/attention.py 2>&1 | grep -v "^deplodock from" | tee $OUT/variants.log
