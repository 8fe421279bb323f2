# Session 27, call 1 (at the commit the README names): the GPU tests of the backend, the
# API, restack and the capture's decomposition (and torch 2.11's decomposition compared
# with ours on every OpInfo entry's first sample); TinyLlama and Qwen2.5-7B first calls through deplodock.compile beside
# torch.compile's (first_call.py), and where a TinyLlama deplodock.compile spends its
# time, cold and warm (profile_compile.py).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
cd $R
timeout -s KILL 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rA -W ignore test/test_torch_backend.py test/test_api.py test/test_restack.py test/test_export_cache.py > $OUT/gpu_tests.log 2>&1
grep -E "^(PASSED|FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -30
# torch 2.11's decomposition against ours, on every OpInfo entry's first sample
timeout 150 python3 docs/bench/cpu-2026-12-06-s27/decomposition_same.py 1 2>/dev/null | grep -E "^same|^DIFF"
cd /tmp
DEPLODOCK_STATS=1 timeout 150 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b api inductor 2>&1 | grep -v DEBUG
timeout 120 python3 $R/docs/bench/h200-2026-12-06-s27/profile_compile.py tinyllama-1.1b > $OUT/profile.log 2>&1
grep -E "RESULT|=====" $OUT/profile.log
DEPLODOCK_STATS=1 timeout 150 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py qwen2.5-7b api 2>&1 | grep -v DEBUG
