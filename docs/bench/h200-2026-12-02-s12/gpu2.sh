#!/bin/bash
# Session 12's second H200 run: the small-products tiles swept (bench.sweep, variants built
# through the passes' options beside cuBLAS), then the shapes group with every change of
# the session (online softmax, small-product tiles).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
cd /tmp
timeout -s KILL 230 python3 -m deplodock.bench.sweep --shape matmul:8192x32x31x33 \
  --shape matmul:4096x64x64x64 --shape matmul:16384x16x16x16 --shape matmul:2048x17x65x129 \
  --max-waste 4 --out $OUT/sweep-small > $OUT/sweep-small.log 2>&1
timeout -s KILL 330 deplodock bench --filter shapes --budget 0.5 --rounds 10 --out $OUT/shapes \
  > $OUT/shapes.log 2>&1
cd $OUT && tar czf shapes.tgz shapes 2>/dev/null; rm -rf shapes
