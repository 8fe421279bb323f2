# Session 30, call 1, in order of what matters most:
# 1. the GPU tests (every `-m gpu` test: the new packed float4 stores of register tiles
#    against torch, test_vectorize.py::test_matmuls_with_packed_stores_match_torch);
# 2. the stores' speed: this build beside the session's starting build (stores_ab.sh);
# 3. issue 21's first calls on one host: deplodock.compile of TinyLlama and Qwen2.5-7B
#    (cold, warm), then torch.compile's (Inductor's) first call of TinyLlama;
# 4. `deplodock run tinyllama` cold and warm (logits against eager).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
for b in start; do
  python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/$b .whl/$b/*.whl .whl/xdsl*.whl .whl/ordered*.whl .whl/immutable*.whl
done
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name --format=csv,noheader; nproc; date
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor, xdsl.dialects.builtin; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend, deplodock.pipeline; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
for s in site; do
  PYTHONPATH=/tmp/$s /usr/bin/time -f "bytecode warm-up ($s) %e s" python3 -c "$IMPORTS"
done
cd $R
timeout -s KILL 120 python3 -m pytest -m gpu -p no:cacheprovider -rA -W ignore test/test_vectorize.py test/test_api.py test/test_schedule.py > $OUT/gpu_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -5
cd /tmp
timeout 150 bash $R/docs/bench/h200-2026-12-06-s30/stores_ab.sh 2>&1 | tee $OUT/stores_ab.log
date
timeout 75 python3 $R/docs/bench/h200-2026-12-06-s29/first_calls.py new /tmp/site 2>&1 | grep -v DEBUG | tee $OUT/first_calls.log
timeout 70 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b inductor 2>&1 | grep -v DEBUG | sed "s/^/inductor: /" | tee $OUT/inductor.log
C=$(mktemp -d)
DEPLODOCK_CACHE_DIR=$C timeout 50 deplodock run tinyllama --seq 128 --no-bench > $OUT/run_tinyllama.cold.log 2>&1
grep -vE "DEBUG" $OUT/run_tinyllama.cold.log | grep -E "compiled in|kernels for|logits|error" | sed "s/^/run cold: /"
date
