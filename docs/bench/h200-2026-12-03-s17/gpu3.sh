# Session 17, call 3: deplodock.compile through the restack against eager on the GPU
# (api_check.py), then the restack tests.
set -x
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
export DEPLODOCK_CACHE_DIR=/tmp/dcache3
python3 docs/bench/h200-2026-12-03-s17/api_check.py
python3 -m pytest -q -p no:cacheprovider -x test/test_restack.py 2>&1 | tail -3
