#!/bin/bash
# Session 11's fourth H200 run: edge tiles with aligned operand copies (edge.py), and the
# shapes group again.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
S=$PWD/docs/bench/h200-2026-12-02-s11
cd /tmp
timeout -s KILL 150 python3 $S/edge.py > $OUT/edge-aligned.txt 2>&1
timeout -s KILL 300 deplodock bench --filter shapes --budget 0.5 --rounds 10 --out $OUT/shapes \
  > $OUT/shapes3.log 2>&1
cd $OUT && tar czf results3.tgz shapes 2>/dev/null; rm -rf shapes
