# Session 27, call 2 (the device time left after refused starts fits no more than this):
# on the GPU machine's torch 2.11, the capture's decomposition tests and the API's GPU
# tests; torch 2.11's decomposition compared with ours on every OpInfo entry's first
# sample; TinyLlama's deplodock.compile cold and warm (first_call.py).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
timeout -s KILL 100 python3 -m pytest -q -p no:cacheprovider -rA -W ignore test/test_export_cache.py test/test_api.py > $OUT/gpu_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -15
timeout 130 python3 docs/bench/cpu-2026-12-06-s27/decomposition_same.py 1 2>/dev/null | grep -E "^same|^DIFF"
cd /tmp
DEPLODOCK_STATS=1 timeout 60 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b api 2>&1 | grep -v DEBUG
