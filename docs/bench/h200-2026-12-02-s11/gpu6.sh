#!/bin/bash
# Session 11's sixth H200 run: rows read again kept in L2 (wider groups for long rows).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout -s KILL 240 deplodock bench --filter 'shapes/softmax/odd,shapes/loss/cross-entropy,shapes/layernorm/odd,seed/softmax' \
  --budget 0.5 --rounds 10 --out $OUT/rows > $OUT/rows.log 2>&1
cd $OUT && tar czf rows.tgz rows 2>/dev/null; rm -rf rows
