# Session 23, call 3 (issue 21), gpu1.sh and gpu2.sh in one call, with Python writing its
# bytecode this time: call 1's "bytecode warm-up again" took 16 s (5.4 s on the 2-core
# CPU machine), so the image's PYTHONDONTWRITEBYTECODE (if set) had kept Python from
# writing the cache PYTHONPYCACHEPREFIX names, and every process compiled torch's and
# transformers' sources again, as no user's pip install does. Order: what the issue's
# figures need first (TinyLlama's run and compile, cold and warm; torch.compile's first
# call beside deplodock.compile and the backend, after the backend's and the API's GPU
# tests (Qwen2.5-7B and TinyLlama's warm run left out: 10 minutes of GPU time were left).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
env | grep -i "^PYTHON" ; unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
python3 -c "import sys; print('dont_write_bytecode', sys.dont_write_bytecode, 'pycache_prefix', sys.pycache_prefix)"
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
/usr/bin/time -f "bytecode warm-up again %e s" python3 -c "$IMPORTS"
du -sh /tmp/pyc 2>/dev/null
M=tinyllama
export DEPLODOCK_CACHE_DIR=/tmp/dc-run-$M; rm -rf $DEPLODOCK_CACHE_DIR
/usr/bin/time -f "$M run cold: wall %e s, %M KB" timeout 120 deplodock run $M --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|kernels|wall|rror"
export DEPLODOCK_CACHE_DIR=/tmp/dc-compile-$M; rm -rf $DEPLODOCK_CACHE_DIR
/usr/bin/time -f "$M compile --ir cuda cold: wall %e s, %M KB" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M.cu
/usr/bin/time -f "$M compile --ir cuda warm: wall %e s" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M-2.cu
cmp /tmp/$M.cu /tmp/$M-2.cu && echo "$M warm CUDA identical"
cd $R
timeout -s KILL 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rA -W ignore test/test_torch_backend.py test/test_api.py > $OUT/gpu_tests.log 2>&1; tail -3 $OUT/gpu_tests.log
cd /tmp
unset DEPLODOCK_CACHE_DIR
DEPLODOCK_STATS=1 timeout 260 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b inductor api backend
# Added in session 24: Qwen2.5-7B's run and compile, cold and warm, if time is left.
M=qwen2.5-7b
export DEPLODOCK_CACHE_DIR=/tmp/dc-run-$M; rm -rf $DEPLODOCK_CACHE_DIR
/usr/bin/time -f "$M run cold: wall %e s, %M KB" timeout 120 deplodock run $M --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|kernels|wall|rror"
/usr/bin/time -f "$M run warm: wall %e s" timeout 60 deplodock run $M --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|wall|rror"
export DEPLODOCK_CACHE_DIR=/tmp/dc-compile-$M; rm -rf $DEPLODOCK_CACHE_DIR
/usr/bin/time -f "$M compile --ir cuda cold: wall %e s, %M KB" timeout 90 deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M.cu
/usr/bin/time -f "$M compile --ir cuda warm: wall %e s" timeout 30 deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M-2.cu
