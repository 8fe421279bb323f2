# Session 14, H200 call 1: the fused attention's GPU tests, then the attention variants.
# From the repo root on the GPU machine, after the wheels are installed (see README there).
set -x
python3 -m pytest -q -m gpu -p no:cacheprovider test/test_softmax_sum.py 2>&1 | tail -15
cd /tmp && timeout 420 python3 $OLDPWD/docs/bench/h200-2026-12-03-s14/attention.py "$@"
