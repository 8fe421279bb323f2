# Session 17, call 1: whole TinyLlama and Qwen2.5-7B compiled as their four-layer
# template and restacked (deplodock.restack): `deplodock run` cold (its compile's stages,
# the logits against eager) and warm; `deplodock compile --ir cuda` cold and warm, its
# output against the one lowering every layer (`--stats`, which counts every layer);
# then torch.compile's first call, deplodock.compile and the torch.compile backend on
# TinyLlama (first_call.py from session 16), torch.compile's first call on Qwen.
set -x
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
nproc; python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
for M in tinyllama qwen2.5-7b; do
  export DEPLODOCK_CACHE_DIR=/tmp/dcache-$M
  rm -rf $DEPLODOCK_CACHE_DIR
  deplodock run $M --seq 128 --no-bench
  deplodock run $M --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|output"
  rm -rf $DEPLODOCK_CACHE_DIR
  /usr/bin/time -f "$M compile cold %e s, %M KB" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M.cu
  /usr/bin/time -f "$M compile warm %e s" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M-2.cu
  cmp /tmp/$M.cu /tmp/$M-2.cu && echo "$M warm output identical"
  /usr/bin/time -f "$M compile every layer (--stats) %e s" deplodock compile $M --seq 128 --ir cuda -q --no-cache --stats -o /tmp/$M-every.cu > /tmp/$M-stats.txt 2>&1
  head -16 /tmp/$M-stats.txt
  cmp /tmp/$M.cu /tmp/$M-every.cu && echo "$M restacked CUDA byte-identical to every layer lowered"
done
python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b inductor api backend
python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py qwen2.5-7b inductor api
