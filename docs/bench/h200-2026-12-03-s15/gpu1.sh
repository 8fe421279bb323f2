# Session 15, H200 call 1: the fused attention's GPU tests with chunk-walk, then the
# attention cases chunked against unchunked (session 14's walk), chunk and threads variants,
# then the bench's attention group with eager and torch.compile.
R=$PWD
python3 -m pytest -q -m gpu -p no:cacheprovider test/test_softmax_sum.py 2>&1 | grep -E "passed|failed|^E   .*Error" | head
cd /tmp
CHUNKS=1,32 THREADS=1,4 timeout 330 python3 $R/docs/bench/h200-2026-12-03-s15/attention.py tinyllama_S128 tinyllama_S512 qwen_S128 qwen_S512 d128_S2048 d64_S1000 tinyllama_S32
CHUNKS=1 THREADS= timeout 120 python3 $R/docs/bench/h200-2026-12-03-s15/attention.py decode_kv4096 decode_kv32768 d64_S4096
