# Session 28, call 1: after the warm path stopped loading xDSL (frontends/capture.py,
# the kept targets from the output cache). The GPU tests of the backend, the API, restack,
# the capture and the program cache (its CPU tests too, on torch 2.11: a warm process
# loads no xDSL); then every entry point's first call, cold and warm, on TinyLlama and
# Qwen2.5-7B beside torch.compile's (first_call.py), and `deplodock run` / `compile`.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor, xdsl.dialects.builtin; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend, deplodock.pipeline; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
cd $R
timeout -s KILL 240 python3 -m pytest -p no:cacheprovider -rA -W ignore test/test_program_cache.py test/test_export_cache.py test/test_layer_capture.py > $OUT/cpu_side_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/cpu_side_tests.log | tail -8
timeout -s KILL 200 python3 -m pytest -m gpu -p no:cacheprovider -rA -W ignore test/test_torch_backend.py test/test_api.py test/test_restack.py > $OUT/gpu_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -8
cd /tmp
DEPLODOCK_STATS=1 timeout 240 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b api backend inductor 2>&1 | grep -v DEBUG
DEPLODOCK_STATS=1 timeout 200 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py qwen2.5-7b api backend 2>&1 | grep -v DEBUG
for m in tinyllama qwen2.5-7b; do
  C=$(mktemp -d)
  for t in cold warm; do DEPLODOCK_CACHE_DIR=$C timeout 120 deplodock run $m --seq 128 2>&1 | grep -E "compiled in|match|error" | sed "s/^/$m run $t: /"; done
  C=$(mktemp -d)
  for t in cold warm; do DEPLODOCK_CACHE_DIR=$C /usr/bin/time -f "$m compile --ir cuda $t: wall %e s" timeout 120 deplodock compile $m --seq 128 --ir cuda -q -o /tmp/$m.cu 2>&1 | grep -v DEBUG | tail -1; done
done
