# Session 23, call 2 (issue 21): torch.compile's first call (fresh Inductor cache, then warm),
# deplodock.compile(model, ids) and torch.compile(backend="deplodock"), cold then warm, on
# whole TinyLlama at seq 128 (random weights on the GPU), each in a process of its own,
# with each deplodock child's stage table (DEPLODOCK_STATS=1); then where this host's
# import time goes (python -X importtime); bytecode kept under PYTHONPYCACHEPREFIX as in
# gpu1.sh. MODELS overrides the model list. First, the GPU tests of the backend and the API.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
# the GPU tests of the backend (its warm graph from the program cache against eager) and the API
timeout -s KILL 170 python3 -m pytest -q -m gpu -p no:cacheprovider -rA -W ignore test/test_torch_backend.py test/test_api.py > $OUT/gpu_tests.log 2>&1; tail -3 $OUT/gpu_tests.log
export DEPLODOCK_STATS=1
cd /tmp
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "import torch %e s" python3 -c "import torch"
python3 -X importtime -c "import torch, transformers, torch._dynamo, torch.export; from transformers import LlamaForCausalLM" 2> /tmp/importtime.txt
sort -t'|' -k2 -n /tmp/importtime.txt | tail -12
for M in ${MODELS:-tinyllama-1.1b}; do timeout 400 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py $M inductor api backend; done
