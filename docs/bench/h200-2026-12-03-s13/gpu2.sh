#!/bin/bash
# Session 13's second H200 run: rows at the large-slab budget's edge (94 and 109 KB) and
# the two fused sums chunked (large_rows.py), every GPU-marked test (the 109 KB row's
# launch among them), and the shapes group with the session's changes.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
S=$PWD/docs/bench/h200-2026-12-03-s13
(cd /tmp && timeout -s KILL 150 python3 $S/large_rows.py softmax_24000 softmax_28000 two_sums \
  > $OUT/large_rows-run2.txt 2>&1)
timeout -s KILL 150 python3 -m pytest -q -m gpu -p no:cacheprovider test/ > $OUT/gpu_tests.log 2>&1
tail -3 $OUT/gpu_tests.log
cd /tmp && timeout -s KILL 280 deplodock bench --filter shapes --budget 0.5 --rounds 10 \
  --out $OUT/shapes > $OUT/shapes.log 2>&1
