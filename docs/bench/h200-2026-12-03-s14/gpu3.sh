# Session 14, H200 call 3: GPU tests of the fused attention, the attention cases (fused
# against unfused), then the bench's attention and block groups with eager and torch.compile.
R=$PWD
python3 -m pytest -q -m gpu -p no:cacheprovider test/test_softmax_sum.py 2>&1 | tail -3
cd /tmp
THREADS= timeout 300 python3 $R/docs/bench/h200-2026-12-03-s14/attention.py "$@"
timeout 250 deplodock bench --filter attention --filter block --budget 0.5 --rounds 10 --out $OUT/bench 2>&1 | tail -30
