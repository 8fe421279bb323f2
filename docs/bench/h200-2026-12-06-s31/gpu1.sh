# Session 31, call 1, in order of what matters most:
# 1. session 30's packed float4 stores as planned: the GPU tests of test_vectorize.py
#    (products of K = 16, edge tiles, rows 2039 apart, against torch) and the one bench
#    case whose CUDA they change (shapes/mm/tiny-k) against eager and torch.compile;
# 2. issue 21 on one host: `deplodock run` of TinyLlama and Qwen2.5-7B cold (fresh cache,
#    logits against eager) and warm; torch.compile's (Inductor's) first call of both and
#    deplodock.compile / the deplodock backend, cold and warm (first_call.py, each in a
#    fresh process and cache, stage tables with DEPLODOCK_STATS=1);
# 3. the other warm entry points: `deplodock compile MODEL --ir cuda` and `deplo-opt`.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name --format=csv,noheader; nproc; date
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor, xdsl.dialects.builtin; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend, deplodock.pipeline; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
cd $R
timeout -s KILL 100 python3 -m pytest -m gpu -p no:cacheprovider -rA -W ignore test/test_vectorize.py > $OUT/gpu_tests.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/gpu_tests.log | tail -5
cd /tmp
timeout 100 deplodock bench --filter shapes/mm/tiny-k --budget 0.3 --rounds 5 --no-gemm --out $OUT/bench 2>&1 | grep -v DEBUG | tail -8
date
for m in tinyllama qwen2.5-7b; do
  C=$(mktemp -d)
  DEPLODOCK_CACHE_DIR=$C timeout 200 deplodock run $m --seq 128 --no-bench > $OUT/run_$m.cold.log 2>&1
  grep -vE "DEBUG" $OUT/run_$m.cold.log | grep -E "compiled in|kernels for|logits|error|Error" | sed "s/^/$m run cold: /"
  [ $m = tinyllama ] && DEPLODOCK_CACHE_DIR=$C timeout 60 deplodock run $m --seq 128 --no-bench 2>&1 | grep -E "compiled in|error" | sed "s/^/$m run warm: /"
  C=$(mktemp -d)
  DEPLODOCK_CACHE_DIR=$C /usr/bin/time -f "$m compile --ir cuda cold: wall %e s" timeout 60 deplodock compile $m --seq 128 --ir cuda -q -o /tmp/$m.cu
  DEPLODOCK_CACHE_DIR=$C /usr/bin/time -f "$m compile --ir cuda warm: wall %e s" timeout 60 deplodock compile $m --seq 128 --ir cuda -q -o /tmp/$m-2.cu
  cmp /tmp/$m.cu /tmp/$m-2.cu && echo "$m warm CUDA identical"
  date
done
for m in tinyllama-1.1b qwen2.5-7b; do
  DEPLODOCK_STATS=1 timeout 200 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py $m inductor api backend 2>&1 | grep -v DEBUG | tee $OUT/first_call_$m.log
  date
done
C=$(mktemp -d); export DEPLODOCK_CACHE_DIR=$C
timeout 60 deplodock compile tinyllama --layers 1 --seq 128 --ir loop -q -o /tmp/layer.mlir
for a in cold warm; do /usr/bin/time -f "deplo-opt one layer to kernel $a: wall %e s" timeout 60 deplo-opt /tmp/layer.mlir -p tileify,cooperative-reduce,blockify-launch,materialize -t cuda -o /tmp/layer-$a.cu; done
cmp /tmp/layer-cold.cu /tmp/layer-warm.cu && echo "deplo-opt warm CUDA identical"
date
