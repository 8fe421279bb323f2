# Session 24, call 1 (issue 21): the backend's cold path restacked (dynamo's graph cut to
# four layers), the fake-constant fix, the capture's finer table and the compile-time cuts,
# on the H200 and its host. Bytecode written (the image sets PYTHONDONTWRITEBYTECODE=1,
# which no user's pip install does), one warm-up of the imports, then: the GPU tests of
# the backend and the API; TinyLlama's run and compile, cold and warm; the whole
# TinyLlama through the backend against eager; torch.compile's first call beside
# deplodock.compile's and the backend's (first_call.py).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
/usr/bin/time -f "imports again %e s" python3 -c "$IMPORTS"
cd $R
timeout -s KILL 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rA -W ignore test/test_torch_backend.py test/test_api.py test/test_restack.py > $OUT/gpu_tests.log 2>&1
grep -E "^(PASSED|FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -30
cd /tmp
M=tinyllama
export DEPLODOCK_CACHE_DIR=/tmp/dc-run-$M; rm -rf $DEPLODOCK_CACHE_DIR
/usr/bin/time -f "$M run cold: wall %e s, %M KB" timeout 150 deplodock run $M --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|kernels|wall|rror"
/usr/bin/time -f "$M run warm: wall %e s" timeout 90 deplodock run $M --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|wall|rror"
export DEPLODOCK_CACHE_DIR=/tmp/dc-compile-$M; rm -rf $DEPLODOCK_CACHE_DIR
/usr/bin/time -f "$M compile --ir cuda cold: wall %e s, %M KB" timeout 90 deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M.cu
/usr/bin/time -f "$M compile --ir cuda warm: wall %e s" timeout 30 deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M-2.cu
cmp /tmp/$M.cu /tmp/$M-2.cu && echo "$M warm CUDA identical"
export DEPLODOCK_CACHE_DIR=/tmp/dc-backend; rm -rf $DEPLODOCK_CACHE_DIR
DEPLODOCK_STATS=1 timeout 150 python3 $R/docs/bench/h200-2026-12-05-s24/backend_check.py 2>&1 | grep -v DEBUG
timeout 120 python3 $R/docs/bench/h200-2026-12-05-s24/nvrtc_threads.py 2>&1 | grep -v DEBUG
unset DEPLODOCK_CACHE_DIR
DEPLODOCK_STATS=1 timeout 300 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b inductor api backend 2>&1 | grep -v DEBUG
