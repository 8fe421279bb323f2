# Session 31, call 2:
# 1. the GPU tests of what changed: float4 stores under one row guard (test_vectorize.py),
#    the backend exporting only a stack's four-layer cut (test_torch_backend.py), run
#    --stats (test_api.py);
# 2. the guarded float4 stores' speed: this build beside 0217aee (.whl/old, before them)
#    on the same host, interleaved (`deplodock run -c EXPR --bench --no-torch-compile`);
# 3. the backend's first call of TinyLlama (this build, 0217aee, Inductor) and Qwen2.5-7B
#    (this build; its Inductor figure is call 1's), each in a fresh process and cache.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/old .whl/old/*.whl .whl/xdsl*.whl .whl/ordered*.whl .whl/immutable*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name --format=csv,noheader; nproc; date
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor, xdsl.dialects.builtin; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend, deplodock.pipeline; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
PYTHONPATH=/tmp/old /usr/bin/time -f "bytecode warm-up (old) %e s" python3 -c "$IMPORTS"
cd $R
timeout -s KILL 220 python3 -m pytest -m gpu -p no:cacheprovider -rA -W ignore test/test_vectorize.py test/test_torch_backend.py test/test_api.py > $OUT/gpu_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -6
cd /tmp
EXPRS=(
  "torch.mm(torch.randn(2039,16), torch.randn(16,2048))"
  "torch.mm(torch.randn(2048,16), torch.randn(16,2048))"
  "torch.mm(torch.randn(8191,16), torch.randn(16,8192))"
)
for e in "${EXPRS[@]}"; do
  for b in old:/tmp/old new:/tmp/site; do
    PYTHONPATH=${b#*:} timeout 60 deplodock run -c "$e" --bench --no-torch-compile 2>&1 \
      | grep -E "^\s+(deplodock|eager) |OK|MISMATCH|error|Error" | sed "s|^|${b%%:*} $e: |"
  done
done | tee $OUT/guarded_ab.log
date
DEPLODOCK_STATS=1 timeout 150 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b backend inductor 2>&1 | grep -v DEBUG | tee $OUT/first_call_tinyllama.log
PYTHONPATH=/tmp/old DEPLODOCK_STATS=1 timeout 60 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b backend 2>&1 | grep -v DEBUG | sed "s/^/old: /" | tee $OUT/first_call_tinyllama_old.log
date
DEPLODOCK_STATS=1 timeout 150 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py qwen2.5-7b backend 2>&1 | grep -v DEBUG | tee $OUT/first_call_qwen.log
date
