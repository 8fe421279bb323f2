# Session 18, call 6: head dim 128 as one walk (lift-to-loop's value_columns with the
# lanes split-walk-columns will give), the GPU tests, the d128 variants, then the suite's
# attention and decoder-layer groups again.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
timeout -s KILL 100 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:logging -rA test/test_softmax_sum.py 2>&1 | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|^E  " | tee $OUT/gpu_tests.log
cd /tmp
timeout 150 python3 $R/docs/bench/h200-2026-12-03-s18/attention.py qwen_S512 qwen_S128 d128_S2048 decode_kv4096 2>&1 | grep -v "^deplodock from" | tee $OUT/variants.log
timeout 200 deplodock bench --filter attention --filter block --budget 0.3 --rounds 5 --out $OUT/bench 2>&1 | grep -v "^deplodock from" | tail -16
