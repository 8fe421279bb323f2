# Session 25, call 1 (issue 21): why the backend's warm graph failed on torch 2.11
# (warm_probe.py); what an fsync per cache entry costs on the host (fsync_cost.py; the
# caches no longer sync); TinyLlama and Qwen2.5-7B first calls through deplodock.compile
# and the backend beside torch.compile's, cold and warm (first_call.py); Qwen's run cold.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
/usr/bin/time -f "imports again %e s" python3 -c "$IMPORTS"
timeout 120 python3 $R/docs/bench/h200-2026-12-05-s25/warm_probe.py 2>&1 | grep -v DEBUG
python3 $R/docs/bench/h200-2026-12-05-s25/fsync_cost.py
DEPLODOCK_STATS=1 timeout 200 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b api backend 2>&1 | grep -v DEBUG
DEPLODOCK_STATS=1 timeout 330 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py qwen2.5-7b inductor api backend 2>&1 | grep -v DEBUG
export DEPLODOCK_CACHE_DIR=/tmp/dc-run-qwen; rm -rf $DEPLODOCK_CACHE_DIR
/usr/bin/time -f "qwen run cold: wall %e s, %M KB" timeout 120 deplodock run qwen2.5-7b --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|wall|rror"
