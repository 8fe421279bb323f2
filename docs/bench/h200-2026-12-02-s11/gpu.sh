#!/bin/bash
# Session 11's H200 run (one device call): the shapes group, and attention at S=32 before
# (session 10's wheel, .whl/old) and after (its scores now padded to an edge tile).
#   bash docs/bench/h200-2026-12-02-s11/gpu.sh   (on the device, from the repo root, OUT set)
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/old .whl/old/*.whl
export PATH=/tmp/site/bin:$PATH
cd /tmp
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
PYTHONPATH=/tmp/site timeout -s KILL ${SHAPES_S:-470} deplodock bench --filter shapes \
  --budget 0.5 --rounds 10 --out $OUT/shapes > $OUT/shapes.log 2>&1
for v in new old; do
  site=/tmp/site; [ $v = old ] && site=/tmp/old:/tmp/site
  PYTHONPATH=$site timeout -s KILL 45 deplodock bench --filter 'attention/*/S32' --no-copy \
    --no-gemm --out $OUT/att_$v > $OUT/att_$v.log 2>&1
done
cd $OUT && tar czf results.tgz shapes att_new att_old 2>/dev/null; rm -rf shapes att_new att_old
ls -la $OUT
