# Session 16, call 2: TinyLlama's run cold again (the two-layer trace draws no weights),
# then Qwen2.5-7B: run cold and warm (its logits against eager), compile cold and warm,
# torch.compile's first call on the same model.
set -x
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
export DEPLODOCK_CACHE_DIR=/tmp/dcache2
rm -rf $DEPLODOCK_CACHE_DIR
deplodock run tinyllama --seq 128 --no-bench
deplodock run qwen2.5-7b --seq 128 --no-bench
deplodock run qwen2.5-7b --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|built"
/usr/bin/time -f "compile cold %e s" deplodock compile qwen2.5-7b --seq 128 --ir cuda -q -o /tmp/q.cu
/usr/bin/time -f "compile warm %e s" deplodock compile qwen2.5-7b --seq 128 --ir cuda -q -o /tmp/q2.cu
cmp /tmp/q.cu /tmp/q2.cu && echo "warm output identical"
python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py qwen2.5-7b inductor
