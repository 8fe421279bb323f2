# Session 15, H200 call 3 (the last): the fused attention's GPU tests; the planner's
# lanes (walk_column_lanes) against 1 and 4 lanes on a few cases; then the bench's
# attention, block and model groups with eager and torch.compile.
R=$PWD
python3 -m pytest -q -m gpu -p no:cacheprovider -W ignore test/test_softmax_sum.py 2>&1 | tail -2
cd /tmp
CHUNKS= THREADS= BLOCKS= LANES=1,4 timeout 150 python3 $R/docs/bench/h200-2026-12-03-s15/attention.py tinyllama_S128 d64_S1000 decode_kv32768 tinyllama_S32
timeout 360 deplodock bench --filter attention --filter block --filter model --budget 0.3 --rounds 5 --out $OUT/bench 2>&1 | grep "^\["
