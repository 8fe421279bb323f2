# Session 25, call 2: the GPU tests of the backend, the API and restack (the warm graph's
# constants read outside dynamo's tracing context); TinyLlama's first calls through
# deplodock.compile and the backend (collecting rarely), cold and warm, each in a process
# of its own (first_call.py; torch.compile's figures are call 1's and session 24's: the
# device time left after refused starts fits no more).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
cd $R
timeout -s KILL 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rA -W ignore test/test_torch_backend.py test/test_api.py test/test_restack.py > $OUT/gpu_tests.log 2>&1
grep -E "^(PASSED|FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -30
cd /tmp
DEPLODOCK_STATS=1 timeout 200 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b api backend 2>&1 | grep -v DEBUG
