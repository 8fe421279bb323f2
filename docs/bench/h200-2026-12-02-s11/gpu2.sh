#!/bin/bash
# Session 11's second H200 run: the shapes group after the first run's fixes (the
# suite's CUDA is byte-identical to session 10's but for attention S32, timed in gpu.sh).
#   bash docs/bench/h200-2026-12-02-s11/gpu2.sh   (on the device, from the repo root, OUT set)
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout -s KILL ${SHAPES_S:-300} deplodock bench --filter shapes \
  --budget 0.5 --rounds 10 --out $OUT/shapes > $OUT/shapes2.log 2>&1
cd $OUT && tar czf results2.tgz shapes 2>/dev/null; rm -rf shapes
