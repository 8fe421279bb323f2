# Session 18, call 4: the new defaults (batched walks, the batch loop rolled, two lanes
# from 8192 rows on) against one key a step, other blocks and four lanes; the GPU tests.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
timeout -s KILL 100 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:logging -rA test/test_softmax_sum.py 2>&1 | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|^E  " | tee $OUT/gpu_tests.log
cd /tmp
timeout 400 python3 $R/docs/bench/h200-2026-12-03-s18/attention.py tinyllama_S512 tinyllama_S128 qwen_S512 qwen_S128 d64_S4096 d64_S1000 d128_S2048 decode_kv32768 2>&1 | grep -v "^deplodock from" | tee $OUT/variants.log
