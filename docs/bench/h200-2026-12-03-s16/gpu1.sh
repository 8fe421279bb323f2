# Session 16, call 1: compile time of whole TinyLlama, cold and warm, every entry point,
# beside torch.compile's first call; `deplodock run` also checks the logits against eager.
set -x
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
nproc; python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
export DEPLODOCK_CACHE_DIR=/tmp/dcache
rm -rf $DEPLODOCK_CACHE_DIR
deplodock run tinyllama --seq 128 --no-torch-compile
deplodock run tinyllama --seq 128 --no-bench
/usr/bin/time -f "compile cold %e s" deplodock compile tinyllama --seq 128 --ir cuda -q -o /tmp/t.cu
/usr/bin/time -f "compile warm %e s" deplodock compile tinyllama --seq 128 --ir cuda -q -o /tmp/t2.cu
cmp /tmp/t.cu /tmp/t2.cu && echo "warm output identical"
deplodock compile tinyllama --seq 128 --ir cuda -q -o /tmp/t3.cu --stats 2>&1 | head -14
python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b inductor api backend
