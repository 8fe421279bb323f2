#!/bin/bash
# Session 12's first H200 run: the online softmax. rows.py (online against the two-pass
# form through the passes' options, each beside eager and torch.compile), then the
# benchmark's cases whose CUDA the online softmax changed, with this session's wheel and
# with session 11's (.whl/old), and the shapes group with this session's.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/oldsite .whl/old/*.whl
cp -r /tmp/site/xdsl* /tmp/site/immutabledict* /tmp/site/ordered_set* /tmp/oldsite/ 2>/dev/null
export PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
S=$PWD/docs/bench/h200-2026-12-02-s12
cd /tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt
CHANGED='seed/softmax,softmax/,layer/,shapes/softmax/odd,shapes/loss/cross-entropy'
PYTHONPATH=/tmp/site timeout -s KILL 200 python3 $S/rows.py > $OUT/rows.txt 2>&1
PYTHONPATH=/tmp/site timeout -s KILL 170 python3 -m deplodock.cli bench --filter $CHANGED \
  --budget 0.5 --rounds 10 --out $OUT/new > $OUT/changed-new.log 2>&1
PYTHONPATH=/tmp/oldsite timeout -s KILL 170 python3 -m deplodock.cli bench --filter $CHANGED \
  --budget 0.5 --rounds 10 --out $OUT/old > $OUT/changed-old.log 2>&1
cd $OUT && tar czf changed.tgz new old 2>/dev/null; rm -rf new old
