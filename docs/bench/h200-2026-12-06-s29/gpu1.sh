# Session 29, call 1: the deferred restack (a stack's interior copies made only when the
# IR is asked for) and the fusion refusals asked before substituting, on the GPU host.
# The GPU tests of restack, the API and the backend; `deplodock run` of both models
# (logits against eager, cold and warm); then the first calls beside the previous
# commit's wheel (196b416, .whl/old) on the same host, and torch.compile's.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/old .whl/old/*.whl .whl/xdsl*.whl .whl/ordered*.whl .whl/immutable*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor, xdsl.dialects.builtin; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend, deplodock.pipeline; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
PYTHONPATH=/tmp/old /usr/bin/time -f "bytecode warm-up (old) %e s" python3 -c "$IMPORTS"
cd $R
timeout -s KILL 200 python3 -m pytest -p no:cacheprovider -rA -W ignore test/test_restack.py > $OUT/restack_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/restack_tests.log | tail -5
timeout -s KILL 200 python3 -m pytest -m gpu -p no:cacheprovider -rA -W ignore test/test_torch_backend.py test/test_api.py test/test_executor.py > $OUT/gpu_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -5
cd /tmp
for m in tinyllama qwen2.5-7b; do
  C=$(mktemp -d)
  DEPLODOCK_CACHE_DIR=$C timeout 150 deplodock run $m --seq 128 > $OUT/run_$m.cold.log 2>&1
  grep -vE "DEBUG" $OUT/run_$m.cold.log | grep -E "compiled in|kernels for|logits|deplodock |eager|torch.compile|error" | sed "s/^/$m run cold: /"
  DEPLODOCK_CACHE_DIR=$C timeout 60 deplodock run $m --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|error" | sed "s/^/$m run warm: /"
done
timeout 120 python3 $R/docs/bench/h200-2026-12-06-s29/first_calls.py new /tmp/site old /tmp/old 2>&1 | grep -v DEBUG
DEPLODOCK_STATS=1 timeout 120 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b inductor 2>&1 | grep -v DEBUG
