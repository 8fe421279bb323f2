# Session 32, call 1 (H200): what issue 21 still had to show at HEAD.
# 1. the GPU tests of test_api.py (run MODEL builds its random weights on the GPU now);
# 2. `deplodock run MODEL --seq 128 --stats` cold (fresh cache, logits against eager) and
#    warm (program cache hit), `compile MODEL --ir cuda` cold and warm, for TinyLlama and
#    Qwen2.5-7B; `deplo-opt` on one layer's loop IR cold and warm.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name --format=csv,noheader; nproc; date
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor, xdsl.dialects.builtin; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend, deplodock.pipeline; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
cd $R
timeout -s KILL 150 python3 -m pytest -m gpu -p no:cacheprovider -rA -W ignore test/test_api.py > $OUT/gpu_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -8
cd /tmp
for m in tinyllama qwen2.5-7b; do
  C=$(mktemp -d)
  for a in cold warm; do
    DEPLODOCK_CACHE_DIR=$C /usr/bin/time -f "$m run $a: wall %e s" timeout 170 deplodock run $m --seq 128 --no-bench --stats > $OUT/run_$m.$a.log 2>&1
    grep -vE "DEBUG" $OUT/run_$m.$a.log | grep -E "compiled in|random weights|logits|^  [a-z(]|wall|rror" | sed "s/^/$m run $a: /"
  done
  C=$(mktemp -d)
  DEPLODOCK_CACHE_DIR=$C /usr/bin/time -f "$m compile --ir cuda cold: wall %e s" timeout 60 deplodock compile $m --seq 128 --ir cuda -q -o /tmp/$m.cu
  DEPLODOCK_CACHE_DIR=$C /usr/bin/time -f "$m compile --ir cuda warm: wall %e s" timeout 60 deplodock compile $m --seq 128 --ir cuda -q -o /tmp/$m-2.cu
  cmp /tmp/$m.cu /tmp/$m-2.cu && echo "$m warm CUDA identical"
  date
done
C=$(mktemp -d); export DEPLODOCK_CACHE_DIR=$C
timeout 60 deplodock compile tinyllama --layers 1 --seq 128 --ir loop -q -o /tmp/layer.mlir
for a in cold warm; do /usr/bin/time -f "deplo-opt one layer to kernel $a: wall %e s" timeout 60 deplo-opt /tmp/layer.mlir -p tileify,cooperative-reduce,blockify-launch,materialize -t cuda -o /tmp/layer-$a.cu; done
cmp /tmp/layer-cold.cu /tmp/layer-warm.cu && echo "deplo-opt warm CUDA identical"
date
