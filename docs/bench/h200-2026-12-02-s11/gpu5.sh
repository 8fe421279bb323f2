#!/bin/bash
# Session 11's last H200 run: random irregular products against PyTorch (real launches),
# and every GPU-marked test.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
S=$PWD/docs/bench/h200-2026-12-02-s11
(cd /tmp && timeout -s KILL 200 python3 $S/edge_random.py 30 > $OUT/edge_random.txt 2>&1)
timeout -s KILL 300 python3 -m pytest -q -m gpu -p no:cacheprovider test/ > $OUT/gpu_tests.log 2>&1
tail -3 $OUT/gpu_tests.log
