# Session 14, H200 call 6 (the last): the fused attention's GPU tests, the attention cases
# fused against unfused (and the dot products rolled), then the bench's attention and block
# groups with eager and torch.compile.
R=$PWD
python3 -m pytest -q -m gpu -p no:cacheprovider -p no:logging test/test_softmax_sum.py 2>&1 | grep -E "passed|failed|^E   .*Error" | head
cd /tmp
THREADS= timeout 230 python3 $R/docs/bench/h200-2026-12-03-s14/attention.py tinyllama_S128 tinyllama_S512 qwen_S32 qwen_S128 qwen_S512 decode_kv4096 decode_kv32768 d128_S2048
timeout 250 deplodock bench --filter attention --filter block --budget 0.3 --rounds 5 --out $OUT/bench 2>&1 | grep "^\["
