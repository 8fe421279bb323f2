#!/bin/bash
# Session 13's first H200 run: rows past 48 KB staged whole (large_rows.py: the large slab
# against the row re-read from global memory, beside eager and torch.compile), then every
# GPU-marked test (the dynamic shared memory launch among them).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
S=$PWD/docs/bench/h200-2026-12-03-s13
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt
(cd /tmp && timeout -s KILL 260 python3 $S/large_rows.py > $OUT/large_rows.txt 2>&1)
timeout -s KILL 300 python3 -m pytest -q -m gpu -p no:cacheprovider test/ > $OUT/gpu_tests.log 2>&1
tail -3 $OUT/gpu_tests.log
