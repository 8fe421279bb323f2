# Session 27, call 3 (what the device time left after refused starts fits): on the GPU
# machine's torch 2.11, the capture's decomposition tests, and torch 2.11's decomposition
# compared with ours on every OpInfo entry's first sample.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
timeout -s KILL 60 python3 -m pytest -q -p no:cacheprovider -W ignore test/test_export_cache.py 2>&1 | tail -3
timeout 120 python3 docs/bench/cpu-2026-12-06-s27/decomposition_same.py 1 2>/dev/null | grep -E "^same|^DIFF"
