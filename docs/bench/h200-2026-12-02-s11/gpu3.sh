#!/bin/bash
# Session 11's third H200 run: why an edge-tile matmul is slower than its divisible
# neighbour (edge.py with and without the residency cap; ncu on prime and even).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
S=$PWD/docs/bench/h200-2026-12-02-s11
cd /tmp
timeout -s KILL 150 python3 $S/edge.py > $OUT/edge.txt 2>&1
timeout -s KILL 90 python3 $S/edge.py --no-cap prime aligned lin-odd odd-k > $OUT/edge_nocap.txt 2>&1
for c in prime even; do
  timeout -s KILL 90 ncu --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis -k regex:k_matmul -c 1 \
    python3 $S/edge.py $c > $OUT/ncu_$c.txt 2>&1
done
